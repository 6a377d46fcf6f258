"""Pooled training windows for one network shared by every symbol (TensorFlow-free).

Why: a global model learns from many symbols at once, so each symbol's windows must speak
the same units. Every symbol is standardised by its own recent returns (mean and std), and
its targets by that same std (sqrt(h) x std at horizon h, h x mean as the centre), so a
symbol's scaling needs none of its targets learned: a symbol the network never saw is
scaled the same way, from its prices alone, and any price level gives the same windows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ._windows import Scaling, n_samples, training_windows
from .base import MAX_HORIZON, ForecastError

_EPS = 1e-12
_STEPS = np.arange(1, MAX_HORIZON + 1, dtype=np.float64)


def symbol_scaling(prices: np.ndarray, train_points: int) -> Scaling:
    """A symbol's scaling from its last ``train_points`` prices: inputs by the mean and std
    of its log returns, targets at horizon h by h x mean and sqrt(h) x std (a random walk's
    spread), so no target is fitted and the same rule serves unseen symbols."""
    recent = np.asarray(prices, dtype=np.float64)[-int(train_points) :]
    returns = np.diff(np.log(recent))
    if len(returns) < 2:
        raise ForecastError(f"need at least 3 prices to scale a symbol, got {len(recent)}")
    mean = float(returns.mean())
    std = float(max(returns.std(), _EPS))
    return Scaling(x_mean=mean, x_std=std, y_mean=mean * _STEPS, y_std=std * np.sqrt(_STEPS))


@dataclass(frozen=True)
class PooledWindows:
    """Every symbol's standardised windows, stacked; ``counts`` says how many each gave."""

    x: np.ndarray  # (n, window, 1) float32
    y: np.ndarray  # (n, MAX_HORIZON) float32
    symbols: tuple[str, ...]
    counts: tuple[int, ...]


def pooled_windows(
    series: Mapping[str, np.ndarray], window: int, train_points: int
) -> PooledWindows:
    """Windows of each symbol's last ``train_points`` prices, each in its own scaling.

    Symbols too short for one window are left out (they can still be forecast); symbols
    are taken in sorted order so the same data always gives the same arrays.
    """
    xs, ys, names, counts = [], [], [], []
    for symbol in sorted(series):
        prices = np.asarray(series[symbol], dtype=np.float64)[-int(train_points) :]
        if n_samples(len(prices), window) < 1:
            continue
        x, y = training_windows(prices, window, symbol_scaling(prices, train_points))
        xs.append(x)
        ys.append(y)
        names.append(symbol)
        counts.append(len(x))
    if not xs:
        raise ForecastError(
            f"no symbol has more than {window + MAX_HORIZON} prices to build training windows"
        )
    return PooledWindows(np.concatenate(xs), np.concatenate(ys), tuple(names), tuple(counts))


# The held-out slice a pooled training checks itself on: each symbol's last windows, after a
# gap of MAX_HORIZON windows so that no training target (30 days after its window) reaches
# into a held-out window's days.
HELD_OUT_WINDOWS = 200
GAP_WINDOWS = MAX_HORIZON


@dataclass(frozen=True)
class Split:
    """Training and held-out windows, each symbol's held-out slice after its training ones."""

    x: np.ndarray
    y: np.ndarray
    held_x: np.ndarray
    held_y: np.ndarray


def held_out_split(
    pooled: PooledWindows, held_out: int = HELD_OUT_WINDOWS, gap: int = GAP_WINDOWS
) -> Split:
    """Per symbol: its last ``held_out`` windows held out, the ``gap`` before them dropped,
    the rest trained on. A symbol too short for that holds out half of what the gap leaves
    (at least as many windows stay for training); one too short for a gap holds out none."""
    train: list[tuple[np.ndarray, np.ndarray]] = []
    held: list[tuple[np.ndarray, np.ndarray]] = []
    stop = 0
    for count in pooled.counts:
        start, stop = stop, stop + count
        x, y = pooled.x[start:stop], pooled.y[start:stop]
        keep = min(held_out, (count - gap) // 2)
        if keep < 1:
            train.append((x, y))
            continue
        train.append((x[: count - keep - gap], y[: count - keep - gap]))
        held.append((x[count - keep :], y[count - keep :]))
    if not held:
        raise ForecastError(f"no symbol has the {2 + gap} windows a held-out slice needs")
    return Split(
        np.concatenate([x for x, _ in train]),
        np.concatenate([y for _, y in train]),
        np.concatenate([x for x, _ in held]),
        np.concatenate([y for _, y in held]),
    )


def fit_shrinkage(outputs: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Per horizon, the factor c in [0, 1] minimising Σ (y - c·out)² on held-out windows:
    Σ out·y / Σ out², clipped. 0 leaves the drift alone (a standardised output of 0 is the
    symbol's mean return), 1 trusts the network as it is."""
    out = np.asarray(outputs, np.float64)
    y = np.asarray(targets, np.float64)
    power = (out * out).sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.where(power > 0, (out * y).sum(axis=0) / power, 0.0)
    return np.clip(np.nan_to_num(c), 0.0, 1.0)
