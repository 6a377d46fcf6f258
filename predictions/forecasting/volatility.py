"""How much a price may move over the next h days: σ(t, h) from the price history alone.

Why: the point forecast carries no skill over "no change" (docs/evaluation.md), so what a
forecast can offer is its band, and a band worth having is narrow when the market is calm
and wide when it is not. Three estimates of the daily variance compete for the band (the
evaluation picks the one the service uses):

- ``rolling``: the plain variance of the last 250 daily log returns (about a trading year);
- ``ewma``: RiskMetrics' exponentially weighted variance, λ = 0.94 (a half-life of about
  11 days), flat over the path (σ²(t, h) = h · σ²(t, 1));
- ``gjr``: GJR-GARCH(1,1) with Student-t errors (``arch``), whose variance reverts to its
  long-run level over the path and reacts more to falls than to rises.

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

EWMA_LAMBDA = 0.94
ROLLING_WINDOW = 250
SEED_RETURNS = 20  # returns that seed the EWMA recursion (their plain mean square)
MIN_GARCH_RETURNS = 250  # fewer returns than this and the GARCH fit is not trusted
METHODS = ("rolling", "ewma", "gjr")


def log_returns(prices: np.ndarray) -> np.ndarray:
    """Daily log returns: element k is the return into price k + 1."""
    return np.diff(np.log(np.asarray(prices, dtype=np.float64)))


def ewma_variance(returns: np.ndarray, lam: float = EWMA_LAMBDA) -> np.ndarray:
    """v[k] = the variance forecast for returns[k] from returns[:k]; one element more than
    ``returns`` (the last is the forecast for the next, unseen day)."""
    r2 = np.asarray(returns, dtype=np.float64) ** 2
    out = np.empty(len(r2) + 1)
    out[0] = r2[:SEED_RETURNS].mean() if len(r2) else math.nan
    for k, value in enumerate(r2):  # a plain loop: ~10k steps is well under a millisecond
        out[k + 1] = lam * out[k] + (1 - lam) * value
    return out


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
    """GJR-GARCH(1,1) parameters for returns in log units (not percent)."""

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


def fit_gjr(returns: np.ndarray) -> GJRParams:
    """Maximum-likelihood GJR-GARCH(1,1)-t on the returns (scaled to percent for the
    optimiser, as ``arch`` recommends). Raises ValueError when too few or it fails."""
    from arch import arch_model  # imports slowly; only the fits need it

    r = np.asarray(returns, dtype=np.float64)
    if len(r) < MIN_GARCH_RETURNS:
        raise ValueError(f"{len(r)} returns are too few for a GARCH fit ({MIN_GARCH_RETURNS})")
    model = arch_model(100 * r, mean="Constant", vol="GARCH", p=1, o=1, q=1, dist="t")
    fit = model.fit(disp="off", show_warning=False)
    if fit.convergence_flag != 0:
        raise ValueError(f"the GARCH fit did not converge (flag {fit.convergence_flag})")
    p = fit.params
    return GJRParams(
        mu=float(p["mu"]) / 100,
        omega=float(p["omega"]) / 100**2,
        alpha=float(p["alpha[1]"]),
        gamma=float(p["gamma[1]"]),
        beta=float(p["beta[1]"]),
        nu=float(p["nu"]),
    )


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

    Without ``params`` (EWMA, rolling) the daily variance is flat: h · σ²(t, 1). With GJR
    parameters each day's expected variance reverts towards the long-run level at rate
    ``persistence`` (the Student-t errors are symmetric, so a fall is expected half the time).
    """
    v1 = np.asarray(first_step, dtype=np.float64)
    if params is None or not params.persistence < 1:
        return horizon * v1
    phi, bar = params.persistence, params.long_run_variance
    decay = (1 - phi**horizon) / (1 - phi)  # Σ_{k=0}^{h-1} φ^k
    return horizon * bar + (v1 - bar) * decay


def first_step_variance(
    returns: np.ndarray, method: str, params: GJRParams | None = None
) -> tuple[np.ndarray, GJRParams | None]:
    """v[k] = the variance forecast for returns[k] from returns[:k], by `method`, with the
    GARCH parameters used (fitted on every return unless `params` are given)."""
    if method == "ewma":
        return ewma_variance(returns), None
    if method == "rolling":
        return rolling_variance(returns), None
    if method == "gjr":
        params = params or fit_gjr(returns)
        return gjr_variance(returns, params), params
    raise ValueError(f"unknown volatility method {method!r}; known: {', '.join(METHODS)}")


def horizon_variance(
    prices: np.ndarray,
    method: str,
    horizon: int,
    refit_origins: Sequence[int] | None = None,
) -> np.ndarray:
    """v[o - 1] = the variance of the ``horizon``-day log return after origin ``o``, for
    every origin o = 1 .. len(prices) (the last is the live forecast after the last bar).

    ``gjr`` with ``refit_origins`` is fitted at each of those origins on the prices before
    it and filtered daily until the next (the way the evaluation refreshes the models);
    without, it is fitted once on the whole history, as the service does at request time.
    Before the first fit the EWMA stands in.
    """
    r = log_returns(prices)
    if method != "gjr" or refit_origins is None:
        variances, params = first_step_variance(r, method)
        return path_variance(variances, horizon, params)
    out = path_variance(ewma_variance(r), horizon)
    starts = sorted(refit_origins)
    for first, following in zip(starts, [*starts[1:], len(out) + 1], strict=True):
        seen = r[: first - 1]  # origin o has seen prices[:o], so returns[:o - 1]
        if len(seen) < MIN_GARCH_RETURNS:
            continue
        params = fit_gjr(seen)
        block = slice(first - 1, following - 1)
        out[block] = path_variance(gjr_variance(r, params)[block], horizon, params)
    return out


_LIVE_FITS: dict[bytes, GJRParams] = {}
_LIVE_FITS_KEPT = 64


def live_sigma(prices: np.ndarray, method: str, steps: int) -> np.ndarray:
    """σ of the k-day log return after the last bar, for k = 1 .. steps.

    The GARCH fit is kept per distinct history (64 at most), so a symbol asked again on
    the same bars is not refitted.
    """
    r = log_returns(prices)
    key = hashlib.blake2b(r.tobytes(), digest_size=16).digest()
    variances, params = first_step_variance(r, method, _LIVE_FITS.get(key))
    if params is not None and key not in _LIVE_FITS:
        if len(_LIVE_FITS) >= _LIVE_FITS_KEPT:
            _LIVE_FITS.pop(next(iter(_LIVE_FITS)))
        _LIVE_FITS[key] = params
    first = variances[-1]
    ks = np.arange(1, steps + 1)
    return np.sqrt(np.array([float(path_variance(first, int(k), params)) for k in ks]))
