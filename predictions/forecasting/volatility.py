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
- ``parkinson``, ``garman_klass``, ``rogers_satchell``: the EWMA (λ = 0.94) of a range-based
  daily variance (range_variance.py: the day's open, high, low and close, plus the
  squared overnight gap), flat over the path;
- ``har_parkinson``, ``har_garman_klass``, ``har_rogers_satchell``: a HAR model (har.py) on
  that range-based variance, iterated over the path.

The range-based methods need the bars (``Bars``), not only the closes.

Every array is indexed by origin: ``horizon_variance(prices, method, h)[o - 1]`` is the
variance of the h-day log return after origin ``o`` (the forecast that has seen
``prices[:o]``), so the last element is the live forecast after the last bar.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .har import MONTH, HARParams, fit_har, forecast_sums
from .range_variance import ESTIMATORS, Bars, daily_variance

EWMA_LAMBDA = 0.94
ROLLING_WINDOW = 250
SEED_RETURNS = 20  # values that seed an EWMA recursion (their plain mean)
MIN_GARCH_RETURNS = 250  # fewer returns than this and the GARCH fit is not trusted
GARCH_METHODS = ("garch", "gjr")
RANGE_EWMA_METHODS = ESTIMATORS  # "parkinson", "garman_klass", "rogers_satchell"
HAR_METHODS = tuple(f"har_{e}" for e in ESTIMATORS)
CLOSE_METHODS = ("rolling", "ewma", *GARCH_METHODS)
RANGE_METHODS = (*RANGE_EWMA_METHODS, *HAR_METHODS)
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
    "rolling_variance",
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
    r2 = np.concatenate([[0.0], np.cumsum(np.asarray(returns, dtype=np.float64) ** 2)])
    k = np.arange(len(r2))
    first = np.maximum(k - window, 0)
    counts = k - first
    out = np.full(len(r2), math.nan)
    seen = counts >= SEED_RETURNS
    out[seen] = (r2[k[seen]] - r2[first[seen]]) / counts[seen]
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
    phi, bar = params.persistence, params.long_run_variance
    decay = (1 - phi**horizon) / (1 - phi)  # Σ_{k=0}^{h-1} φ^k
    return horizon * bar + (v1 - bar) * decay


def _daily_measure(prices: np.ndarray, method: str, bars: Bars | None) -> np.ndarray:
    """What a method's daily variance is measured by: squared returns, or a range-based
    variance (element k: the day of return k)."""
    if not needs_bars(method):
        return log_returns(prices) ** 2
    if bars is None:
        raise ValueError(f"the {method} band needs the day's open, high and low, not only closes")
    if len(bars) != len(prices):
        raise ValueError(f"{len(bars)} bars for {len(prices)} prices")
    return daily_variance(bars, method.removeprefix("har_"))


def horizon_variance(
    prices: np.ndarray,
    method: str,
    horizon: int,
    refit_origins: Sequence[int] | None = None,
    bars: Bars | None = None,
) -> np.ndarray:
    """v[o - 1] = the variance of the ``horizon``-day log return after origin ``o``, for
    every origin o = 1 .. len(prices) (the last is the live forecast after the last bar).

    The fitted methods (GARCH, GJR, HAR) with ``refit_origins`` are fitted at each of those
    origins on the data before it and filtered daily until the next (the way the evaluation
    refreshes the models); without, they are fitted once on the whole history, as the
    service does at request time. Before the first fit the EWMA of the same daily measure
    stands in. Range-based methods need ``bars`` (aligned with ``prices``).
    """
    return horizon_variances(prices, method, (horizon,), refit_origins, bars)[horizon]


def horizon_variances(
    prices: np.ndarray,
    method: str,
    horizons: Sequence[int],
    refit_origins: Sequence[int] | None = None,
    bars: Bars | None = None,
) -> dict[int, np.ndarray]:
    """horizon_variance for several horizons at once, each fit made once."""
    if method not in METHODS:
        raise ValueError(f"unknown volatility method {method!r}; known: {', '.join(METHODS)}")
    prices = np.asarray(prices, dtype=np.float64)
    measure = _daily_measure(prices, method, bars)  # one element per return
    if method == "rolling":
        first = rolling_variance(log_returns(prices))
        return {h: path_variance(first, h) for h in horizons}
    out = {h: path_variance(ewma_smooth(measure), h) for h in horizons}  # EWMA, or stand-in
    if method in ("ewma", *RANGE_EWMA_METHODS):
        return out
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
            params = fit_garch(r[:seen], leverage=method == "gjr")
            first_step = gjr_variance(r, params)[block]
            for h in horizons:
                out[h][block] = path_variance(first_step, h, params)
        else:
            har = fit_har(measure[:seen])
            ks = block[block >= MONTH]
            sums = forecast_sums(measure, har, ks, max(horizons))
            for h in horizons:
                out[h][ks] = sums[:, h - 1]
    return out


_LIVE_FITS: dict[bytes, GJRParams | HARParams] = {}
_LIVE_FITS_KEPT = 64


def _live_fit(key: bytes, fit: GJRParams | HARParams) -> None:
    if len(_LIVE_FITS) >= _LIVE_FITS_KEPT:
        _LIVE_FITS.pop(next(iter(_LIVE_FITS)))
    _LIVE_FITS[key] = fit


def live_sigma(prices: np.ndarray, method: str, steps: int, bars: Bars | None = None) -> np.ndarray:
    """σ of the k-day log return after the last bar, for k = 1 .. steps.

    The fit (GARCH, GJR, HAR) is kept per distinct history and method (64 at most), so a
    symbol asked again on the same bars is not refitted. Raises ValueError when the history
    cannot give one (too short, a failed fit, a range method without bars).
    """
    if method not in METHODS:
        raise ValueError(f"unknown volatility method {method!r}; known: {', '.join(METHODS)}")
    prices = np.asarray(prices, dtype=np.float64)
    measure = _daily_measure(prices, method, bars)
    ks = np.arange(1, steps + 1)
    if method == "rolling":
        return np.sqrt(ks * rolling_variance(log_returns(prices))[-1])
    if method in ("ewma", *RANGE_EWMA_METHODS):
        return np.sqrt(ks * ewma_smooth(measure)[-1])
    digest = hashlib.blake2b(digest_size=16)
    digest.update(method.encode())
    digest.update(prices.tobytes())
    if bars is not None and needs_bars(method):
        digest.update(bars.digest_bytes())
    key = digest.digest()
    kept = _LIVE_FITS.get(key)
    if method in GARCH_METHODS:
        r = log_returns(prices)
        params = kept if isinstance(kept, GJRParams) else fit_garch(r, leverage=method == "gjr")
        _live_fit(key, params)
        first = gjr_variance(r, params)[-1]
        return np.sqrt(np.array([float(path_variance(first, int(k), params)) for k in ks]))
    har = kept if isinstance(kept, HARParams) else fit_har(measure)
    _live_fit(key, har)
    return np.sqrt(forecast_sums(measure, har, np.array([len(measure)]), steps)[0])
