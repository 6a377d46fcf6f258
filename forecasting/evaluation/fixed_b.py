"""Diebold–Mariano with a bandwidth that does not understate long memory: fixed-b inference.

Why: loss differences of volatility bands inherit the long memory of volatility, so a
Newey–West variance with a lag of n^(1/3) (11–13 daily origins) misses most of their
autocorrelation and its t-statistic is too large (with a lag of 60 they fell 30–40 %).
Here the Bartlett (Newey–West) long-run variance uses a bandwidth that grows like √n,

    S = max(h, ⌈1.3 √n⌉)       (Lazarus, Lewis, Stock and Watson 2018)

— about 50 at n = 1,500, 90 at n = 4,600 — and the statistic is compared with its
*fixed-b* distribution (Kiefer and Vogelsang 2005), the limit when S / n = b stays fixed,
which keeps the test's size where a normal reference would over-reject. That distribution
has no closed form: it is simulated once (10,000 Gaussian series of 1,000 days, seeded) and
read at b = S / n. Kiefer and Vogelsang's polynomial for its 97.5 % quantile,
1.96 + 2.9694 b + 0.4160 b² − 0.5324 b³, checks the simulation
(``test_it_keeps_the_size_of_the_hac_test``).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from forecasting.evaluation.band_tests import Comparison
from forecasting.evaluation.significance import diebold_mariano

SIM_SERIES, SIM_LENGTH, SIM_SEED = 10_000, 1_000, 20_051
MAX_B = 0.5  # the simulated autocovariances reach lag 500 of 1,000
KV_975 = (1.96, 2.9694, 0.4160, -0.5324)  # Kiefer & Vogelsang (2005), Bartlett, 97.5 %


def bandwidth(n: int, horizon: int) -> int:
    """Bartlett bandwidth S (weights 1 − j/S for lags j < S): max(h, ⌈1.3 √n⌉), below n/2."""
    return max(1, min(max(horizon, math.ceil(1.3 * math.sqrt(n))), max(1, n // 2)))


def kv_critical_value(b: float) -> float:
    """Kiefer and Vogelsang's (2005) 97.5 % fixed-b critical value for the Bartlett kernel."""
    return float(sum(c * b**k for k, c in enumerate(KV_975)))


@functools.cache
def _null_autocovariances() -> tuple[np.ndarray, np.ndarray]:
    """Means and autocovariances (lags 0 .. 500) of the simulated Gaussian series."""
    rng = np.random.default_rng(SIM_SEED)
    lags = int(MAX_B * SIM_LENGTH) + 1
    means = np.empty(SIM_SERIES)
    gammas = np.empty((SIM_SERIES, lags))
    size = 1 << (2 * SIM_LENGTH - 1).bit_length()
    for start in range(0, SIM_SERIES, 1000):  # in chunks: the FFTs of all at once are large
        x = rng.standard_normal((min(1000, SIM_SERIES - start), SIM_LENGTH))
        means[start : start + len(x)] = x.mean(axis=1)
        centred = x - x.mean(axis=1, keepdims=True)
        spectrum = np.fft.rfft(centred, size, axis=1)
        auto = np.fft.irfft(spectrum * np.conj(spectrum), size, axis=1)[:, :lags]
        gammas[start : start + len(x)] = auto / SIM_LENGTH
    return means, gammas


@functools.cache
def null_statistics(b: float) -> np.ndarray:
    """|t| of the simulated series under the fixed-b Bartlett variance with S = b · length,
    sorted (the null distribution the p-values read)."""
    means, gammas = _null_autocovariances()
    s = min(b, MAX_B) * SIM_LENGTH
    j = np.arange(1, gammas.shape[1])
    weights = np.where(j < s, 1 - j / s, 0.0)
    variance = gammas[:, 0] + 2 * gammas[:, 1:] @ weights
    return np.sort(np.abs(means * math.sqrt(SIM_LENGTH) / np.sqrt(variance)))


def fixed_b_p_value(statistic: float, b: float) -> float:
    """Two-sided p-value of a t-statistic under the fixed-b null at b (rounded to 0.001):
    (1 + simulated |t| at least as large) / (1 + simulations), so never 0."""
    if not math.isfinite(statistic):
        return 0.0 if math.isinf(statistic) else math.nan
    null = null_statistics(round(max(b, 0.001), 3))
    beyond = len(null) - int(np.searchsorted(null, abs(statistic), side="left"))
    return (1 + beyond) / (1 + len(null))


def dm_fixed_b(loss_a: np.ndarray, loss_b: np.ndarray, horizon: int) -> Comparison:
    """DM test of equal mean loss with the Bartlett variance at bandwidth ``bandwidth(n, h)``
    and a fixed-b p-value; ``lag`` is S − 1, the last lag with a weight."""
    n = len(loss_a)
    s = bandwidth(n, horizon)
    dm = diebold_mariano(loss_a, loss_b, s - 1)  # weights 1 − j/((s − 1) + 1) = 1 − j/s
    p = fixed_b_p_value(dm.statistic, s / n)
    return Comparison(dm.mean_difference, dm.statistic, p, s - 1, n)
