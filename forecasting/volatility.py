"""How much a price may move over the next h days: σ(t, h) from the price history alone.

Why: the point forecast carries no skill over "no change" (docs/evaluation.md), so what a
forecast can offer is its band, and a band worth having is narrow when the market is calm
and wide when it is not. Estimates of the daily variance compete for the band (the
evaluation picks the one the service uses, on data it does not score it on):

- ``rolling``: the plain variance of the last 250 daily log returns (about a trading year);
- ``ewma``: RiskMetrics' exponentially weighted variance, λ = 0.94 (a half-life of about
  11 days), flat over the path (σ²(t, h) = h · σ²(t, 1));
- ``garch``: GARCH(1,1) with Student-t errors (``arch``), the baseline every other must
  beat: its variance reverts to its long-run level over the path;
- ``gjr``: GJR-GARCH(1,1)-t, which also reacts more to falls than to rises;
- ``parkinson``, ``garman_klass``, ``rogers_satchell``: the EWMA (λ = 0.94) v₁ of a
  range-based daily variance (range_variance.py: the day's open, high, low and close, plus
  the squared overnight gap), reverting over the path to its mean V̄ over the last 1,000
  days: σ²(t, h) = h·V̄ + (v₁ − V̄)(1 − φʰ)/(1 − φ), φ from ``params`` (the evaluation
  tunes it; φ = 1, the default, is the flat h·v₁);
- ``har_parkinson``, ``har_garman_klass``, ``har_rogers_satchell``: a HAR model (har.py) on
  that range-based variance, iterated over the path;
- ``har_direct_parkinson``, ``har_direct_garman_klass``: HAR with one regression per
  horizon (the log of the next h days' mean variance);
- ``har_panel_parkinson``, ``har_panel_garman_klass``: HAR slopes fitted on every sample
  symbol at once (``params`` carries them at request time), each symbol's own mean log
  variance as its level, iterated.

The range-based methods need the bars (``Bars``), not only the closes. Every method but the
flat ones reverts to a long-run level over the path.

Every array is indexed by origin: ``horizon_variance(prices, method, h)[o - 1]`` is the
variance of the h-day log return after origin ``o`` (the forecast that has seen
``prices[:o]``), so the last element is the live forecast after the last bar.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .har import (
    MONTH,
    HARParams,
    direct_sums,
    fit_har,
    fit_har_direct,
    fit_har_panel,
    floor_of,
    forecast_sums,
    panel_sums,
)
from .range_variance import ESTIMATORS, Bars, daily_variance

EWMA_LAMBDA = 0.94
ROLLING_WINDOW = 250
SEED_RETURNS = 20  # values that seed an EWMA recursion (their plain mean)
MIN_GARCH_RETURNS = 250  # fewer returns than this and the GARCH fit is not trusted
GARCH_METHODS = ("garch", "gjr")
RANGE_EWMA_METHODS = ESTIMATORS  # "parkinson", "garman_klass", "rogers_satchell"
HAR_METHODS = tuple(f"har_{e}" for e in ESTIMATORS)
HAR_DIRECT_METHODS = ("har_direct_parkinson", "har_direct_garman_klass")
HAR_PANEL_METHODS = ("har_panel_parkinson", "har_panel_garman_klass")
CLOSE_METHODS = ("rolling", "ewma", *GARCH_METHODS)
RANGE_METHODS = (*RANGE_EWMA_METHODS, *HAR_METHODS, *HAR_DIRECT_METHODS, *HAR_PANEL_METHODS)
LONG_RUN_DAYS = 1000  # V̄: the mean daily variance of the last ~4 years (the service has 5)
# φ candidates for the range EWMAs' reversion, tuned on the tune windows; 1 = flat (h · v₁)
REVERSION_GRID = (0.9, 0.95, 0.97, 0.98, 0.99, 0.995, 1.0)
HAR_PANEL_KEYS = ("b0", "daily", "weekly", "monthly", "residual_variance")
METHODS = (*CLOSE_METHODS, *RANGE_METHODS)
BASELINE = "garch"  # GARCH(1,1)-t: what every other band must beat
LABELS = {
    "rolling": "rolling 250-day",
    "ewma": "EWMA (λ = 0.94)",
    "garch": "GARCH(1,1)-t",
    "gjr": "GJR-GARCH(1,1)-t",
    "parkinson": "Parkinson range EWMA",
    "garman_klass": "Garman–Klass range EWMA",
    "rogers_satchell": "Rogers–Satchell range EWMA",
    "har_parkinson": "HAR on Parkinson range",
    "har_garman_klass": "HAR on Garman–Klass range",
    "har_rogers_satchell": "HAR on Rogers–Satchell range",
    "har_direct_parkinson": "HAR on Parkinson range, direct",
    "har_direct_garman_klass": "HAR on Garman–Klass range, direct",
    "har_panel_parkinson": "pooled HAR on Parkinson range",
    "har_panel_garman_klass": "pooled HAR on Garman–Klass range",
}

__all__ = [
    "BASELINE",
    "METHODS",
    "RANGE_METHODS",
    "Bars",
    "GJRParams",
    "LABELS",
    "ewma_variance",
    "fit_garch",
    "fit_gjr",
    "horizon_variance",
    "horizon_variances",
    "live_sigma",
    "log_returns",
    "needs_bars",
    "path_variance",
    "reverting_path",
    "rolling_variance",
    "trailing_mean",
]


def needs_bars(method: str) -> bool:
    """Whether a method reads the day's open, high and low (not only the closes)."""
    return method in RANGE_METHODS


def log_returns(prices: np.ndarray) -> np.ndarray:
    """Daily log returns: element k is the return into price k + 1."""
    return np.diff(np.log(np.asarray(prices, dtype=np.float64)))


def ewma_smooth(values: np.ndarray, lam: float = EWMA_LAMBDA) -> np.ndarray:
    """v[k] = the exponentially weighted mean of values[:k] (seeded by the first 20); one
    element more than ``values``."""
    x = np.asarray(values, dtype=np.float64)
    out = np.empty(len(x) + 1)
    out[0] = x[:SEED_RETURNS].mean() if len(x) else math.nan
    for k, value in enumerate(x):  # a plain loop: ~10k steps is well under a millisecond
        out[k + 1] = lam * out[k] + (1 - lam) * value
    return out


def ewma_variance(returns: np.ndarray, lam: float = EWMA_LAMBDA) -> np.ndarray:
    """v[k] = the variance forecast for returns[k] from returns[:k]; one element more than
    ``returns`` (the last is the forecast for the next, unseen day)."""
    return ewma_smooth(np.asarray(returns, dtype=np.float64) ** 2, lam)


def rolling_variance(returns: np.ndarray, window: int = ROLLING_WINDOW) -> np.ndarray:
    """v[k] = the mean square of the (up to) ``window`` returns before returns[k]."""
    return trailing_mean(np.asarray(returns, dtype=np.float64) ** 2, window)


def trailing_mean(values: np.ndarray, window: int) -> np.ndarray:
    """m[k] = the mean of the (up to) ``window`` values before values[k] (NaN before 20);
    one element more than ``values``, like ewma_smooth."""
    cum = np.concatenate([[0.0], np.cumsum(np.asarray(values, dtype=np.float64))])
    k = np.arange(len(cum))
    first = np.maximum(k - window, 0)
    counts = k - first
    out = np.full(len(cum), math.nan)
    seen = counts >= SEED_RETURNS
    out[seen] = (cum[k[seen]] - cum[first[seen]]) / counts[seen]
    return out


@dataclass(frozen=True)
class GJRParams:
    """GJR-GARCH(1,1) parameters for returns in log units (not percent); ``gamma`` = 0 is
    the plain GARCH(1,1)."""

    mu: float
    omega: float
    alpha: float
    gamma: float
    beta: float
    nu: float  # Student-t degrees of freedom

    @property
    def persistence(self) -> float:
        """α + γ/2 + β: how much of today's excess variance is left tomorrow."""
        return self.alpha + self.gamma / 2 + self.beta

    @property
    def long_run_variance(self) -> float:
        return self.omega / (1 - self.persistence) if self.persistence < 1 else math.inf


def fit_garch(returns: np.ndarray, *, leverage: bool) -> GJRParams:
    """Maximum-likelihood GARCH(1,1)-t (GJR's with ``leverage``) on the returns (scaled to
    percent for the optimiser, as ``arch`` recommends). Raises ValueError when too few
    returns or the fit fails."""
    from arch import arch_model  # imports slowly; only the fits need it

    r = np.asarray(returns, dtype=np.float64)
    if len(r) < MIN_GARCH_RETURNS:
        raise ValueError(f"{len(r)} returns are too few for a GARCH fit ({MIN_GARCH_RETURNS})")
    o = 1 if leverage else 0
    model = arch_model(100 * r, mean="Constant", vol="GARCH", p=1, o=o, q=1, dist="t")
    fit = model.fit(disp="off", show_warning=False)
    if fit.convergence_flag != 0:
        raise ValueError(f"the GARCH fit did not converge (flag {fit.convergence_flag})")
    p = fit.params
    return GJRParams(
        mu=float(p["mu"]) / 100,
        omega=float(p["omega"]) / 100**2,
        alpha=float(p["alpha[1]"]),
        gamma=float(p["gamma[1]"]) if leverage else 0.0,
        beta=float(p["beta[1]"]),
        nu=float(p["nu"]),
    )


def fit_gjr(returns: np.ndarray) -> GJRParams:
    """GJR-GARCH(1,1)-t (see fit_garch)."""
    return fit_garch(returns, leverage=True)


def gjr_variance(returns: np.ndarray, params: GJRParams) -> np.ndarray:
    """The filtered one-step variances under fixed parameters; same shape as ewma_variance."""
    r = np.asarray(returns, dtype=np.float64)
    eps = r - params.mu
    out = np.empty(len(r) + 1)
    out[0] = float(np.mean(eps[:SEED_RETURNS] ** 2))
    for k, e in enumerate(eps):
        out[k + 1] = (
            params.omega + (params.alpha + params.gamma * (e < 0)) * e * e + params.beta * out[k]
        )
    return out


def path_variance(
    first_step: np.ndarray | float, horizon: int, params: GJRParams | None = None
) -> np.ndarray:
    """Variance of the h-day log return, Σ_k E[σ²(t + k)] for k = 1..h.

    Without ``params`` (EWMA, rolling) the daily variance is flat: h · σ²(t, 1). With GARCH
    parameters each day's expected variance reverts towards the long-run level at rate
    ``persistence`` (the Student-t errors are symmetric, so a fall is expected half the time).
    """
    v1 = np.asarray(first_step, dtype=np.float64)
    if params is None or not params.persistence < 1:
        return horizon * v1
    return reverting_path(v1, horizon, params.persistence, params.long_run_variance)


def reverting_path(
    first_step: np.ndarray | float,
    horizon: int | np.ndarray,
    phi: float,
    long_run: np.ndarray | float,
) -> np.ndarray:
    """Σ_k E[σ²(t + k)], k = 1..h, when each day's excess over the long-run variance V̄ is φ
    times the day before's: h·V̄ + (v₁ − V̄)(1 − φʰ)/(1 − φ); φ ≥ 1 is the flat h·v₁."""
    v1 = np.asarray(first_step, dtype=np.float64)
    if not phi < 1:
        return horizon * v1
    decay = (1 - phi**horizon) / (1 - phi)  # Σ_{k=0}^{h-1} φ^k
    return horizon * long_run + (v1 - long_run) * decay


def reversion(params: Mapping[str, Any] | None) -> float:
    """φ of a range EWMA's reversion from the band's parameters (1, flat, when absent)."""
    phi = float((params or {}).get("phi", 1.0))
    if not 0 < phi <= 1:
        raise ValueError(f"the reversion φ must lie in (0, 1], got {phi}")
    return phi


def _range_ewma(measure: np.ndarray, horizons: Sequence[int], phi: float) -> dict[int, np.ndarray]:
    """The range EWMA's h-day variances at every origin, reverting to the trailing mean."""
    first = ewma_smooth(measure)
    if not phi < 1:
        return {h: h * first for h in horizons}
    long_run = trailing_mean(measure, LONG_RUN_DAYS)
    return {h: reverting_path(first, h, phi, long_run) for h in horizons}


def _daily_measure(prices: np.ndarray, method: str, bars: Bars | None) -> np.ndarray:
    """What a method's daily variance is measured by: squared returns, or a range-based
    variance (element k: the day of return k)."""
    if not needs_bars(method):
        return log_returns(prices) ** 2
    if bars is None:
        raise ValueError(f"the {method} band needs the day's open, high and low, not only closes")
    if len(bars) != len(prices):
        raise ValueError(f"{len(bars)} bars for {len(prices)} prices")
    return daily_variance(bars, _estimator(method))


def _estimator(method: str) -> str:
    """The range estimator a range method reads (``har_panel_parkinson`` → ``parkinson``)."""
    for prefix in ("har_panel_", "har_direct_", "har_"):
        method = method.removeprefix(prefix)
    return method


def panel_slopes(params: Mapping[str, Any] | None) -> HARParams:
    """The pooled HAR's slopes from the band's parameters; ValueError when absent."""
    try:
        values = [float((params or {})[k]) for k in HAR_PANEL_KEYS]
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"the pooled HAR needs its slopes ({', '.join(HAR_PANEL_KEYS)})") from exc
    b0, daily, weekly, monthly, residual_variance = values
    return HARParams(b0, daily, weekly, monthly, residual_variance, tiny=0.0)


def panel_fit_data(dates: np.ndarray, prices: np.ndarray, bars: Bars, method: str) -> Peer:
    """One symbol's part of the pooled HAR's fit: each daily variance with its bar's date."""
    measure = _daily_measure(np.asarray(prices, dtype=np.float64), method, bars)
    return Peer(np.asarray(dates)[1:], measure)


@dataclass(frozen=True)
class Peer:
    """A symbol's daily variances and the dates of their bars (for the pooled HAR)."""

    dates: np.ndarray
    measure: np.ndarray

    def through(self, last: Any) -> np.ndarray:
        """The variances of bars dated on or before ``last``."""
        return self.measure[self.dates <= last]


def horizon_variance(
    prices: np.ndarray,
    method: str,
    horizon: int,
    refit_origins: Sequence[int] | None = None,
    bars: Bars | None = None,
    params: Mapping[str, Any] | None = None,
) -> np.ndarray:
    """v[o - 1] = the variance of the ``horizon``-day log return after origin ``o``, for
    every origin o = 1 .. len(prices) (the last is the live forecast after the last bar).

    The fitted methods (GARCH, GJR, HAR) with ``refit_origins`` are fitted at each of those
    origins on the data before it and filtered daily until the next (the way the evaluation
    refreshes the models); without, they are fitted once on the whole history, as the
    service does at request time. Before the first fit the EWMA of the same daily measure
    stands in. Range-based methods need ``bars`` (aligned with ``prices``); ``params`` are
    the band's tuned parameters (φ of a range EWMA, the pooled HAR's slopes).
    """
    return horizon_variances(prices, method, (horizon,), refit_origins, bars, params)[horizon]


def horizon_variances(
    prices: np.ndarray,
    method: str,
    horizons: Sequence[int],
    refit_origins: Sequence[int] | None = None,
    bars: Bars | None = None,
    params: Mapping[str, Any] | None = None,
    *,
    dates: np.ndarray | None = None,
    peers: Sequence[Peer] = (),
) -> dict[int, np.ndarray]:
    """horizon_variance for several horizons at once, each fit made once. The pooled HAR
    without slopes in ``params`` is fitted at each refit on ``peers`` (every symbol of the
    panel, this one included) through the date of the last bar seen (``dates``)."""
    if method not in METHODS:
        raise ValueError(f"unknown volatility method {method!r}; known: {', '.join(METHODS)}")
    prices = np.asarray(prices, dtype=np.float64)
    measure = _daily_measure(prices, method, bars)  # one element per return
    if method == "rolling":
        first = rolling_variance(log_returns(prices))
        return {h: path_variance(first, h) for h in horizons}
    if method in RANGE_EWMA_METHODS:
        return _range_ewma(measure, horizons, reversion(params))
    out = {h: path_variance(ewma_smooth(measure), h) for h in horizons}  # EWMA, or stand-in
    if method == "ewma":
        return out
    fixed = panel_slopes(params) if method in HAR_PANEL_METHODS and params else None
    if method in HAR_PANEL_METHODS and fixed is None and (dates is None or not peers):
        raise ValueError("the pooled HAR needs its slopes, or the panel's data to fit them")
    r = log_returns(prices)
    size = len(r) + 1
    if refit_origins is None:
        plan = [(len(r), np.arange(size))]  # one fit on every return, every origin
    else:
        starts = sorted(refit_origins)
        stops = [*starts[1:], size + 1]
        # origin o has seen prices[:o], so returns[:o - 1]; its variance sits at o - 1
        plan = [
            (a - 1, np.arange(a - 1, min(b - 1, size))) for a, b in zip(starts, stops, strict=True)
        ]
    for seen, block in plan:
        if refit_origins is not None and seen < MIN_GARCH_RETURNS:
            continue  # too little history yet: the EWMA stands in
        if method in GARCH_METHODS:
            fitted = fit_garch(r[:seen], leverage=method == "gjr")
            first_step = gjr_variance(r, fitted)[block]
            for h in horizons:
                out[h][block] = path_variance(first_step, h, fitted)
            continue
        ks = block[block >= MONTH]
        if method in HAR_DIRECT_METHODS:
            fits = {h: fit_har_direct(measure[:seen], h) for h in horizons}
            for h, sums in direct_sums(measure, fits, ks).items():
                out[h][ks] = sums
            continue
        if method in HAR_PANEL_METHODS:
            if fixed is not None:
                slopes = fixed
            else:
                assert dates is not None  # checked above
                slopes = fit_har_panel([p.through(dates[seen]) for p in peers])
            sums = panel_sums(measure, slopes, ks, max(horizons), floor_of(measure[:seen]))
        else:
            sums = forecast_sums(measure, fit_har(measure[:seen]), ks, max(horizons))
        for h in horizons:
            out[h][ks] = sums[:, h - 1]
    return out


_LIVE_FITS: dict[bytes, GJRParams | HARParams | dict[int, HARParams]] = {}
_LIVE_FITS_KEPT = 64


def _live_fit(key: bytes, fit: GJRParams | HARParams | dict[int, HARParams]) -> None:
    if len(_LIVE_FITS) >= _LIVE_FITS_KEPT:
        _LIVE_FITS.pop(next(iter(_LIVE_FITS)))
    _LIVE_FITS[key] = fit


def live_sigma(
    prices: np.ndarray,
    method: str,
    steps: int,
    bars: Bars | None = None,
    params: Mapping[str, Any] | None = None,
) -> np.ndarray:
    """σ of the k-day log return after the last bar, for k = 1 .. steps; ``params`` are the
    band's tuned parameters from calibration.json (φ of a range EWMA, the pooled HAR's
    slopes).

    The fit (GARCH, GJR, HAR) is kept per distinct history and method (64 at most), so a
    symbol asked again on the same bars is not refitted. Raises ValueError when the history
    cannot give one (too short, a failed fit, a range method without bars, a pooled HAR
    without its slopes).
    """
    if method not in METHODS:
        raise ValueError(f"unknown volatility method {method!r}; known: {', '.join(METHODS)}")
    prices = np.asarray(prices, dtype=np.float64)
    measure = _daily_measure(prices, method, bars)
    ks = np.arange(1, steps + 1)
    if method == "rolling":
        return np.sqrt(ks * rolling_variance(log_returns(prices))[-1])
    if method == "ewma":
        return np.sqrt(ks * ewma_smooth(measure)[-1])
    if method in RANGE_EWMA_METHODS:
        phi = reversion(params)
        long_run = trailing_mean(measure, LONG_RUN_DAYS)[-1]
        return np.sqrt(reverting_path(ewma_smooth(measure)[-1], ks, phi, long_run))
    if method in HAR_PANEL_METHODS:
        slopes = panel_slopes(params)
        end = np.array([len(measure)])
        return np.sqrt(panel_sums(measure, slopes, end, steps, floor_of(measure))[0])
    digest = hashlib.blake2b(digest_size=16)
    digest.update(method.encode())
    digest.update(prices.tobytes())
    if bars is not None and needs_bars(method):
        digest.update(bars.digest_bytes())
    key = digest.digest()
    kept = _LIVE_FITS.get(key)
    if method in GARCH_METHODS:
        r = log_returns(prices)
        fitted = kept if isinstance(kept, GJRParams) else fit_garch(r, leverage=method == "gjr")
        _live_fit(key, fitted)
        first = gjr_variance(r, fitted)[-1]
        return np.sqrt(np.array([float(path_variance(first, int(k), fitted)) for k in ks]))
    end = np.array([len(measure)])
    if method in HAR_DIRECT_METHODS:
        fits = kept if isinstance(kept, dict) else {}
        fits = {int(k): fits.get(int(k)) or fit_har_direct(measure, int(k)) for k in ks}
        _live_fit(key, fits)
        sums = direct_sums(measure, fits, end)
        return np.sqrt(np.array([float(sums[int(k)][0]) for k in ks]))
    har = kept if isinstance(kept, HARParams) else fit_har(measure)
    _live_fit(key, har)
    return np.sqrt(forecast_sums(measure, har, end, steps)[0])
