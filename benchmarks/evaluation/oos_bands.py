"""Which 80 % band to serve: today's residual band against volatility bands, scored as
forecasts of a distribution on the test windows.

Why: a band can reach any coverage by being wide; what makes it worth having is being
narrow when markets are calm and wide when they are not, at the same coverage. Every
candidate is centred on the same untilted ensemble path and gets the same treatment: one
stretch per horizon, tuned split-conformally on the tune windows of every symbol, then
scored untouched on the test windows by

- the interval score at α = 0.2 (Gneiting and Raftery; width plus 10 × each miss's
  distance, in % of the origin price; lower is better), the primary metric;
- the pinball loss averaged over the quantiles 0.05 … 0.95 both kinds of band define;
- QLIKE of the band's implied variance against the realized variance of the path (sum of
  squared daily log returns) and against Parkinson's high–low range;
- coverage per symbol (n, block-bootstrap interval), by volatility tercile, with Kupiec's
  and Christoffersen's tests on non-overlapping origins.

A volatility band is ``path × exp(±q · σ(t, h))`` with σ from volatility.py; ``q`` is the
conformal stretch (the tune windows' 80 % quantile of |log(actual / path)| / σ).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from benchmarks.evaluation.band_tests import bootstrap_block, christoffersen, dm_hln, holm, kupiec
from benchmarks.evaluation.replay import LEVELS, LIVE, Replay
from benchmarks.evaluation.runs import SymbolRuns
from benchmarks.evaluation.significance import block_indices, mean_interval, percentile_interval
from predictions.forecasting import volatility
from predictions.forecasting.calibration import INTERVAL_LEVEL, band, conformal_scale

ALPHA = 1 - INTERVAL_LEVEL
Z80 = float(stats.norm.ppf(1 - ALPHA / 2))  # 1.2816: the 80 % band's half-width in σ
RESIDUAL = "residual"  # today's band: backtest residual quantiles + half the model spread
CANDIDATES = (RESIDUAL, *volatility.METHODS)
PINBALL_PROBS = (0.05, 0.1, 0.15, 0.2, 0.25, 0.5, 0.75, 0.8, 0.85, 0.9, 0.95)
MIN_TEST_ORIGINS = 250  # a symbol with fewer test origins has too little history to judge
VOL_WINDOW = 20  # trailing days whose realized volatility sorts origins into terciles
N_BOOT = 2000


@dataclass
class Ranges:
    """Daily high/low of a symbol (for Parkinson's variance), aligned with its prices."""

    high: np.ndarray
    low: np.ndarray


@dataclass
class Scored:
    """One candidate's band on one symbol's origins at one horizon (prices / origin price)."""

    origins: np.ndarray
    path: np.ndarray
    actual: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    quantiles: np.ndarray  # (n, len(PINBALL_PROBS))

    @property
    def hits(self) -> np.ndarray:
        return (self.actual >= self.lower) & (self.actual <= self.upper)

    @property
    def interval_score(self) -> np.ndarray:
        """Per origin, in % of the origin price."""
        below = np.maximum(0.0, self.lower - self.actual)
        above = np.maximum(0.0, self.actual - self.upper)
        return 100 * ((self.upper - self.lower) + 2 / ALPHA * (below + above))

    @property
    def pinball(self) -> np.ndarray:
        probs = np.asarray(PINBALL_PROBS)
        diff = self.actual[:, None] - self.quantiles
        return 100 * np.mean(np.maximum(probs * diff, (probs - 1) * diff), axis=1)

    @property
    def implied_variance(self) -> np.ndarray:
        """The variance of the h-day log return a symmetric normal band this wide implies."""
        half = (np.log(self.upper) - np.log(np.maximum(self.lower, 1e-12))) / 2
        return (half / Z80) ** 2


def _sigma(sr: SymbolRuns, method: str, horizon: int, cache: dict[Any, np.ndarray]) -> np.ndarray:
    """h-day log-return σ at every origin o (index o − 1), computed once per symbol."""
    key = (id(sr), method, horizon)
    if key not in cache:
        refits = [first for first, _ in sr.windows.blocks()]
        variance = volatility.horizon_variance(sr.prices, method, horizon, refits)
        cache[key] = np.sqrt(variance)
    return cache[key]


def _residual_band(rep: Replay, scale: float) -> Scored:
    """Today's band, replayed exactly (as the combiner builds it), at every pinball level."""
    path, actual = rep.ensemble[:, -1], rep.actual[:, -1]
    spread = rep.spread * path
    columns: dict[float, np.ndarray] = {0.5: path}
    for level in LEVELS:
        offsets = rep.offsets[:, LEVELS.index(level), :]
        low, high = band(path, offsets[:, 0], offsets[:, 1], spread, scale)
        columns[round((1 - level) / 2, 3)], columns[round(1 - (1 - level) / 2, 3)] = low, high
    lower, upper = columns[round(ALPHA / 2, 3)], columns[round(1 - ALPHA / 2, 3)]
    quantiles = np.stack([columns[p] for p in PINBALL_PROBS], axis=1)
    return Scored(rep.origins, path, actual, lower, upper, quantiles)


def _vol_band(rep: Replay, sigma: np.ndarray, q: float) -> Scored:
    path, actual = rep.ensemble[:, -1], rep.actual[:, -1]
    s = sigma[rep.origins - 1]
    z = stats.norm.ppf(np.asarray(PINBALL_PROBS)) / Z80
    quantiles = path[:, None] * np.exp(q * s[:, None] * z[None, :])
    return Scored(rep.origins, path, actual, path * np.exp(-q * s), path * np.exp(q * s), quantiles)


def sigma_at(
    sr: SymbolRuns, method: str, horizon: int, origins: np.ndarray, cache: dict[Any, np.ndarray]
) -> np.ndarray:
    """σ(t, h) of a volatility method at the given origins."""
    return _sigma(sr, method, horizon, cache)[origins - 1]


def _tune_stretch(
    series: list[SymbolRuns], method: str, horizon: int, cache: dict[Any, np.ndarray]
) -> float:
    scores = []
    for sr in series:
        rep = sr.replayed(LIVE.name, horizon).select(sr.windows.tune_origins(horizon))
        s = _sigma(sr, method, horizon, cache)[rep.origins - 1]
        scores.append(np.abs(np.log(rep.actual[:, -1] / rep.ensemble[:, -1])) / s)
    return conformal_scale(np.concatenate(scores), INTERVAL_LEVEL)


def _path_variances(
    sr: SymbolRuns, ranges: Ranges | None, origins: np.ndarray, horizon: int
) -> tuple[np.ndarray, np.ndarray | None]:
    """Realized variance of each origin's path (squared daily log returns) and Parkinson's."""
    r2 = volatility.log_returns(sr.prices) ** 2  # r2[k]: return into price k + 1
    days = origins[:, None] + np.arange(horizon)[None, :]  # prices o .. o + h − 1
    realized = r2[days - 1].sum(axis=1)
    if ranges is None:
        return realized, None
    daily = np.log(ranges.high / ranges.low) ** 2 / (4 * math.log(2))
    return realized, daily[days].sum(axis=1)


def _qlike(proxy: np.ndarray | None, forecast: np.ndarray) -> float | None:
    if proxy is None:
        return None
    ok = (proxy > 0) & np.isfinite(proxy) & (forecast > 0)
    ratio = proxy[ok] / forecast[ok]
    return float(np.mean(ratio - np.log(ratio) - 1)) if ok.any() else None


def _trailing_vol(sr: SymbolRuns, origins: np.ndarray) -> np.ndarray:
    r = volatility.log_returns(sr.prices)
    index = origins[:, None] - 1 - np.arange(1, VOL_WINDOW + 1)[None, :]  # returns before o
    return r[np.maximum(index, 0)].std(axis=1)


def _cell(
    scored: Scored, proxies: tuple[np.ndarray, np.ndarray | None], horizon: int, seed: int
) -> dict[str, Any]:
    hits = scored.hits
    n = len(hits)
    mean, low, high = mean_interval(hits, bootstrap_block(n, horizon), seed=seed)
    spaced = ~hits[::horizon]  # non-overlapping origins: misses of independent paths
    kupiec_stat, kupiec_p = kupiec(spaced, ALPHA)
    ind_stat, ind_p = christoffersen(spaced)
    variance = scored.implied_variance
    return {
        "interval_score": float(scored.interval_score.mean()),
        "pinball": float(scored.pinball.mean()),
        "qlike_realized": _qlike(proxies[0], variance),
        "qlike_parkinson": _qlike(proxies[1], variance),
        "coverage": mean,
        "coverage_ci": [low, high],
        "n": n,
        "n_independent": int(len(spaced)),
        "width_pct": float(100 * np.mean(scored.upper - scored.lower)),
        "kupiec_p": kupiec_p,
        "christoffersen_p": ind_p,
    }


def _pooled_skill(
    pairs: list[tuple[np.ndarray, np.ndarray]], horizon: int, seed: int
) -> dict[str, Any]:
    """1 − Σ loss / Σ reference over every symbol, with a per-symbol block bootstrap."""
    rng = np.random.default_rng(seed)
    sums = np.zeros((N_BOOT, 2))
    total = np.zeros(2)
    n_eff = 0
    for loss, reference in pairs:
        index = block_indices(len(loss), bootstrap_block(len(loss), horizon), N_BOOT, rng)
        sums += np.stack([loss[index].sum(1), reference[index].sum(1)], axis=1)
        total += [loss.sum(), reference.sum()]
        n_eff += len(loss) // horizon
    low, high = percentile_interval(1 - sums[:, 0] / sums[:, 1])
    return {"skill": float(1 - total[0] / total[1]), "ci": [low, high], "n_independent": n_eff}


def evaluate_bands(
    series: list[SymbolRuns],
    horizons: tuple[int, ...],
    residual_scale: dict[int, float],
    ranges: dict[str, Ranges] | None = None,
    *,
    seed: int = 0,
    cache: dict[Any, np.ndarray] | None = None,
) -> dict[str, Any]:
    """Every candidate band on every symbol and horizon, the comparisons and the winner.
    ``cache`` keeps the σ series for a later caller (the `unsure` comparison)."""
    cache = {} if cache is None else cache
    judged = [
        sr
        for sr in series
        if sr.ok_runs() and len(sr.windows.test_origins(max(horizons))) >= MIN_TEST_ORIGINS
    ]
    out: dict[str, Any] = {
        "candidates": list(CANDIDATES),
        "symbols": [sr.symbol for sr in judged],
        "too_short": [sr.symbol for sr in series if sr not in judged],
        "stretch": {},
        "cells": {sr.symbol: {} for sr in judged},
        "pooled": {},
        "terciles": {},
        "comparisons": {},
    }
    if not judged:
        out["winner"], out["verdict"] = RESIDUAL, "no symbol has enough history to judge a band"
        return out
    bands: dict[tuple[str, int, str], Scored] = {}
    for h in horizons:
        stretch = {RESIDUAL: residual_scale[h]}
        for method in volatility.METHODS:
            stretch[method] = _tune_stretch(judged, method, h, cache)
        out["stretch"][str(h)] = stretch
        for sr in judged:
            rep = sr.replayed(LIVE.name, h).select(sr.windows.test_origins(h))
            proxies = _path_variances(sr, (ranges or {}).get(sr.symbol), rep.origins, h)
            cells = {}
            for name in CANDIDATES:
                scored = (
                    _residual_band(rep, stretch[name])
                    if name == RESIDUAL
                    else _vol_band(rep, _sigma(sr, name, h, cache), stretch[name])
                )
                bands[(sr.symbol, h, name)] = scored
                cells[name] = _cell(scored, proxies, h, seed)
            out["cells"][sr.symbol][str(h)] = cells
        out["pooled"][str(h)] = _pooled(judged, bands, h, seed)
        out["terciles"][str(h)] = _terciles(judged, bands, h)
    out["comparisons"] = _comparisons(judged, bands, horizons, seed)
    out["winner"], out["verdict"] = _winner(out, horizons)
    out["example"] = _example(judged, bands, horizons)
    return out


EXAMPLE_SYMBOL, EXAMPLE_HORIZON = "^GSPC", 5


def _example(
    judged: list[SymbolRuns], bands: dict[tuple[str, int, str], Scored], horizons: tuple[int, ...]
) -> dict[str, Any]:
    """One symbol's test window for the figure: the realized move and each band's edges,
    in % of the origin price, by origin date."""
    sr = next((x for x in judged if x.symbol == EXAMPLE_SYMBOL), judged[0])
    h = EXAMPLE_HORIZON if EXAMPLE_HORIZON in horizons else horizons[0]
    first = bands[(sr.symbol, h, RESIDUAL)]
    return {
        "symbol": sr.symbol,
        "horizon": h,
        "dates": [sr.date(int(o)) for o in first.origins] if sr.dates is not None else None,
        "origins": first.origins.tolist(),
        "move_pct": (100 * (first.actual - 1)).round(3).tolist(),
        "bands": {
            name: {
                "lower_pct": (100 * (bands[(sr.symbol, h, name)].lower - 1)).round(3).tolist(),
                "upper_pct": (100 * (bands[(sr.symbol, h, name)].upper - 1)).round(3).tolist(),
            }
            for name in (RESIDUAL, "gjr")
        },
    }


def _pooled(
    judged: list[SymbolRuns], bands: dict[tuple[str, int, str], Scored], h: int, seed: int
) -> dict[str, Any]:
    pooled = {}
    for name in CANDIDATES:
        hits = [bands[(sr.symbol, h, name)].hits for sr in judged]
        scores = [bands[(sr.symbol, h, name)].interval_score for sr in judged]
        coverage = _pooled_mean(hits, h, seed)
        pooled[name] = {
            "interval_score": float(np.concatenate(scores).mean()),
            "coverage": coverage["mean"],
            "coverage_ci": coverage["ci"],
            "n": int(sum(len(x) for x in hits)),
            "n_independent": int(sum(len(x) // h for x in hits)),
        }
    return pooled


def _pooled_mean(values: list[np.ndarray], h: int, seed: int) -> dict[str, Any]:
    """Mean over every symbol's values, with a per-symbol block bootstrap interval."""
    rng = np.random.default_rng(seed)
    sums, count = np.zeros(N_BOOT), 0
    for v in values:
        v = np.asarray(v, dtype=np.float64)
        sums += v[block_indices(len(v), bootstrap_block(len(v), h), N_BOOT, rng)].sum(1)
        count += len(v)
    low, high = percentile_interval(sums / count)
    return {"mean": float(np.concatenate(values).mean()), "ci": [low, high]}


def _terciles(
    judged: list[SymbolRuns], bands: dict[tuple[str, int, str], Scored], h: int
) -> dict[str, Any]:
    """Coverage when the trailing 20-day volatility was low, middle, high (per-symbol
    terciles of the test window, pooled), for every candidate."""
    groups: dict[str, list[list[np.ndarray]]] = {name: [[], [], []] for name in CANDIDATES}
    for sr in judged:
        origins = bands[(sr.symbol, h, RESIDUAL)].origins
        vol = _trailing_vol(sr, origins)
        cuts = np.quantile(vol, [1 / 3, 2 / 3])
        tercile = np.searchsorted(cuts, vol, side="right")
        for name in CANDIDATES:
            hits = bands[(sr.symbol, h, name)].hits
            for t in range(3):
                groups[name][t].append(hits[tercile == t])
    return {
        name: [float(np.concatenate(parts).mean()) for parts in tiers]
        for name, tiers in groups.items()
    }


PAIRS = (
    ("ewma", RESIDUAL),
    ("gjr", RESIDUAL),
    ("rolling", RESIDUAL),
    ("ewma", "rolling"),
    ("gjr", "rolling"),
    ("gjr", "ewma"),
)


def _comparisons(
    judged: list[SymbolRuns],
    bands: dict[tuple[str, int, str], Scored],
    horizons: tuple[int, ...],
    seed: int,
) -> dict[str, Any]:
    """Interval-score skill of each pair per symbol and horizon: bootstrap interval, DM-HLN
    p-value and whether it stands after Holm over the pair's symbol × horizon cells."""
    out: dict[str, Any] = {}
    for name, reference in PAIRS:
        rows: list[dict[str, Any]] = []
        p_values: list[float] = []
        for h in horizons:
            pairs = []
            for sr in judged:
                loss = bands[(sr.symbol, h, name)].interval_score
                base = bands[(sr.symbol, h, reference)].interval_score
                pairs.append((loss, base))
                block = bootstrap_block(len(loss), h)
                index = block_indices(len(loss), block, N_BOOT, np.random.default_rng(seed))
                samples = 1 - loss[index].mean(1) / base[index].mean(1)
                low, high = percentile_interval(samples)
                test = dm_hln(loss, base, h)
                rows.append(
                    {
                        "symbol": sr.symbol,
                        "horizon": h,
                        "skill": float(1 - loss.mean() / base.mean()),
                        "ci": [low, high],
                        "dm_statistic": test.statistic,
                        "p_value": test.p_value,
                        "lag": test.lag,
                        "n": test.n,
                    }
                )
                p_values.append(test.p_value)
            out.setdefault(f"{name}_vs_{reference}_pooled", {})[str(h)] = _pooled_skill(
                pairs, h, seed
            )
        for row, stands in zip(rows, holm(p_values), strict=True):
            row["better_after_holm"] = bool(stands and row["skill"] > 0)
            row["worse_after_holm"] = bool(stands and row["skill"] < 0)
        out[f"{name}_vs_{reference}"] = rows
    return out


def _winner(report: dict[str, Any], horizons: tuple[int, ...]) -> tuple[str, str]:
    """The band to serve: the volatility band with the lowest mean pooled interval score,
    if its pooled skill over today's band has a 95 % interval above zero at every horizon
    of 1 and 5 days evaluated; otherwise today's band stays."""
    short = [h for h in horizons if h <= 5] or list(horizons)
    ranked = sorted(
        volatility.METHODS,
        key=lambda m: np.mean([report["pooled"][str(h)][m]["interval_score"] for h in horizons]),
    )
    for method in ranked:
        pooled = report["comparisons"][f"{method}_vs_{RESIDUAL}_pooled"]
        if all(pooled[str(h)]["ci"][0] > 0 for h in short):
            skills = ", ".join(f"{100 * pooled[str(h)]['skill']:.1f} %" for h in horizons)
            return method, (
                f"the {method} band scores better than today's band at every short horizon "
                f"(pooled interval-score skill {skills} at {', '.join(map(str, horizons))} "
                "days, 95 % intervals above zero at 1 and 5 days)"
            )
    return RESIDUAL, "no volatility band beat today's band at 1 and 5 days; it stays"


def band_table(bands: dict[str, Any]) -> dict[str, Any]:
    """The ``band`` block of calibration.json: the chosen method, its stretch, and the
    coverage it and today's band reached per symbol and pooled (with n and interval)."""
    method = bands["winner"]
    chosen = (method, RESIDUAL) if method != RESIDUAL else (RESIDUAL,)
    coverage: dict[str, Any] = {name: {} for name in chosen}
    for symbol, by_h in bands.get("cells", {}).items():
        for name in chosen:
            coverage[name][symbol] = {
                h: {
                    "coverage": c[name]["coverage"],
                    "n": c[name]["n"],
                    "ci": c[name]["coverage_ci"],
                }
                for h, c in by_h.items()
            }
    pooled = {
        name: {
            h: {"coverage": p[name]["coverage"], "n": p[name]["n"], "ci": p[name]["coverage_ci"]}
            for h, p in bands.get("pooled", {}).items()
        }
        for name in chosen
    }
    stretch = (
        {h: s[method] for h, s in bands.get("stretch", {}).items()} if method != RESIDUAL else {}
    )
    return {
        "method": method,
        "stretch": stretch,
        "coverage": coverage,
        "pooled": pooled,
        "verdict": bands["verdict"],
    }
