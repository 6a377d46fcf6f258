"""Which 80 % band to serve: candidate bands scored as forecasts of a distribution, chosen
on the tune windows and reported on the test windows, against GARCH(1,1)-t.

Why: a band can reach any coverage by being wide; what makes it worth having is being
narrow when markets are calm and wide when they are not, at the same coverage. Every
candidate is centred on the same untilted ensemble path and gets the same treatment: one
stretch per horizon, tuned split-conformally on the tune windows of every symbol. The band
to serve is chosen from the tune windows' scores (band_choice.py); the test windows are
scored untouched by that choice:

- the interval score at α = 0.2 (Gneiting and Raftery; width plus 10 × each miss's
  distance, in % of the origin price; lower is better), the primary metric;
- the pinball loss averaged over the quantiles 0.05 … 0.95 every kind of band defines;
- QLIKE of the band's implied variance against the realized variance of the path (sum of
  squared daily log returns) and against Parkinson's high–low range;
- coverage per symbol (n, block-bootstrap interval), by volatility tercile, with Kupiec's
  and Christoffersen's tests on non-overlapping origins and Holm's correction.

Pooled skill is Σ loss / Σ reference over every symbol, its interval from a joint
date-block bootstrap (joint_bootstrap.py); per-symbol differences are tested with a
fixed-b Diebold–Mariano test (fixed_b.py) and Holm. The earlier per-symbol bootstrap and
n^(1/3)-lag DM-HLN test are reported beside them, to show what the stricter ones change.

A volatility band is ``path × exp(±q · σ(t, h))`` with σ from volatility.py; ``q`` is the
conformal stretch (the tune windows' 80 % quantile of |log(actual / path)| / σ). A range
EWMA's reversion φ is tuned on the tune windows too (``tune_reversion``), and the pooled
HAR is fitted at each refit on every judged symbol's bars through that date.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from forecasting import har, volatility
from forecasting.calibration import INTERVAL_LEVEL, band, conformal_scale
from forecasting.evaluation.band_choice import RULE, choose_band
from forecasting.evaluation.band_tests import bootstrap_block, christoffersen, dm_hln, kupiec
from forecasting.evaluation.combiner_replay import LEVELS, LIVE, Replay
from forecasting.evaluation.coverage_tests import coverage_tests
from forecasting.evaluation.fixed_b import dm_fixed_b
from forecasting.evaluation.joint_bootstrap import joint_mean, joint_skill
from forecasting.evaluation.runs import SymbolRuns
from forecasting.evaluation.significance import block_sums, mean_interval, percentile_interval
from forecasting.multiple_testing import holm

ALPHA = 1 - INTERVAL_LEVEL
Z80 = float(stats.norm.ppf(1 - ALPHA / 2))  # 1.2816: the 80 % band's half-width in σ
RESIDUAL = "residual"  # today's band: backtest residual quantiles + half the model spread
BASELINE = volatility.BASELINE  # GARCH(1,1)-t
PINBALL_PROBS = (0.05, 0.1, 0.15, 0.2, 0.25, 0.5, 0.75, 0.8, 0.85, 0.9, 0.95)
MIN_TEST_ORIGINS = 250  # a symbol with fewer test origins has too little history to judge
VOL_WINDOW = 20  # trailing days whose realized volatility sorts origins into terciles
N_BOOT = 2000
WINDOWS = ("tune", "test")


def candidates(series: list[SymbolRuns]) -> tuple[str, ...]:
    """Today's band and every volatility method the data allow (range-based ones need every
    symbol's bars, the pooled HAR their dates too)."""
    has_bars = bool(series) and all(sr.bars is not None for sr in series)
    has_dates = has_bars and all(sr.dates is not None for sr in series)
    ranged = tuple(
        m
        for m in (volatility.RANGE_METHODS if has_bars else ())
        if has_dates or m not in volatility.HAR_PANEL_METHODS
    )
    return (RESIDUAL, *volatility.CLOSE_METHODS, *ranged)


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


def _sigma(
    sr: SymbolRuns,
    method: str,
    horizon: int,
    cache: dict[Any, Any],
    horizons: tuple[int, ...] = (),
) -> np.ndarray:
    """h-day log-return σ at every origin o (index o − 1), computed once per symbol (for
    every one of ``horizons`` at once, so each fit is made once). A method's tuned
    parameters and the pooled HAR's panel are read from ``cache`` (set_params, set_panel)."""
    key = (id(sr), method, horizon)
    if key not in cache:
        refits = [first for first, _ in sr.windows.blocks()]
        wanted = tuple(sorted({horizon, *horizons}))
        variances = volatility.horizon_variances(
            sr.prices, method, wanted, refits, sr.bars, cache.get(("params", method)),
            dates=sr.dates, peers=cache.get(("panel", method), ()),
        )  # fmt: skip
        for h, variance in variances.items():
            cache[(id(sr), method, h)] = np.sqrt(variance)
    return cache[key]


def set_params(cache: dict[Any, Any], method: str, params: dict[str, Any]) -> None:
    """Make ``method``'s σ in ``cache`` the one with these parameters (dropping any other)."""
    for key in [k for k in cache if len(k) == 3 and k[1] == method]:
        del cache[key]
    cache[("params", method)] = params


def set_panel(cache: dict[Any, Any], method: str, judged: list[SymbolRuns]) -> None:
    """The pooled HAR's panel: every judged symbol's daily variances with their dates."""
    cache[("panel", method)] = [
        volatility.panel_fit_data(sr.dates, sr.prices, sr.bars, method)
        for sr in judged
        if sr.dates is not None and sr.bars is not None
    ]


def served_params(method: str, cache: dict[Any, Any]) -> dict[str, Any]:
    """What the service needs besides the method and stretch: a range EWMA's φ, or the
    pooled HAR's slopes fitted on every judged symbol's evaluated bars (the latest fit the
    evaluation could make, as a refit would)."""
    if method in volatility.HAR_PANEL_METHODS:
        panel = cache.get(("panel", method)) or []
        fit = har.fit_har_panel([peer.measure for peer in panel])
        return {k: getattr(fit, k) for k in volatility.HAR_PANEL_KEYS}
    return dict(cache.get(("params", method)) or {})


def sigma_at(
    sr: SymbolRuns, method: str, horizon: int, origins: np.ndarray, cache: dict[Any, np.ndarray]
) -> np.ndarray:
    """σ(t, h) of a volatility method at the given origins."""
    return _sigma(sr, method, horizon, cache)[origins - 1]


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


def _tune_stretch(
    series: list[SymbolRuns],
    method: str,
    horizon: int,
    cache: dict[Any, np.ndarray],
    horizons: tuple[int, ...] = (),
) -> float:
    scores = []
    for sr in series:
        rep = sr.replayed(LIVE.name, horizon).select(sr.windows.tune_origins(horizon))
        s = _sigma(sr, method, horizon, cache, horizons)[rep.origins - 1]
        scores.append(np.abs(np.log(rep.actual[:, -1] / rep.ensemble[:, -1])) / s)
    return conformal_scale(np.concatenate(scores), INTERVAL_LEVEL)


def _tune_score(
    series: list[SymbolRuns], method: str, horizon: int, cache: dict[Any, np.ndarray],
    horizons: tuple[int, ...],
) -> float:  # fmt: skip
    """A method's pooled interval score over the tune windows, stretched on them."""
    q = _tune_stretch(series, method, horizon, cache, horizons)
    total = 0.0
    for sr in series:
        rep = sr.replayed(LIVE.name, horizon).select(sr.windows.tune_origins(horizon))
        total += float(_vol_band(rep, _sigma(sr, method, horizon, cache), q).interval_score.sum())
    return total


def tune_reversion(
    series: list[SymbolRuns], method: str, horizons: tuple[int, ...], cache: dict[Any, Any]
) -> dict[str, Any]:
    """A range EWMA's reversion φ, chosen on the tune windows: of volatility.REVERSION_GRID
    (1 is the flat h · v₁), the φ whose band, stretched on the tune windows, has the highest
    mean interval-score skill over GARCH(1,1)-t there across the horizons (ties: the larger
    φ, the less reversion). Leaves ``cache`` holding that φ's σ; returns the figures."""
    reference = {h: _tune_score(series, BASELINE, h, cache, horizons) for h in horizons}
    skill = {}
    for phi in volatility.REVERSION_GRID:
        set_params(cache, method, {"phi": phi})
        scores = [_tune_score(series, method, h, cache, horizons) for h in horizons]
        ratios = [s / reference[h] for s, h in zip(scores, horizons, strict=True)]
        skill[phi] = float(1 - np.mean(ratios))
    best = max(volatility.REVERSION_GRID, key=lambda phi: (round(skill[phi], 6), phi))
    set_params(cache, method, {"phi": best})
    return {"phi": best, "tune_mean_skill": {str(phi): v for phi, v in skill.items()}}


def date_keys(sr: SymbolRuns, origins: np.ndarray) -> np.ndarray:
    """A key per origin shared across symbols: the day number of the bar the forecast was
    made after (its bar index when the series has no dates)."""
    if sr.dates is None:
        return np.asarray(origins, dtype=np.int64) - 1
    days = np.asarray(sr.dates)[np.asarray(origins) - 1].astype("datetime64[D]")
    return days.astype(np.int64)


def _path_variances(
    sr: SymbolRuns, origins: np.ndarray, horizon: int
) -> tuple[np.ndarray, np.ndarray | None]:
    """Realized variance of each origin's path (squared daily log returns) and Parkinson's."""
    r2 = volatility.log_returns(sr.prices) ** 2  # r2[k]: return into price k + 1
    days = origins[:, None] + np.arange(horizon)[None, :]  # prices o .. o + h − 1
    realized = r2[days - 1].sum(axis=1)
    if sr.bars is None:
        return realized, None
    daily = np.log(sr.bars.high / sr.bars.low) ** 2 / (4 * math.log(2))
    return realized, daily[days].sum(axis=1)


def qlike_losses(proxy: np.ndarray | None, forecast: np.ndarray) -> np.ndarray | None:
    """QLIKE per origin, proxy / forecast − log(proxy / forecast) − 1 (NaN where the proxy
    is zero: a path with no move says nothing about the variance's scale)."""
    if proxy is None:
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = proxy / forecast
        loss = ratio - np.log(ratio) - 1
    return np.where((proxy > 0) & np.isfinite(loss), loss, np.nan)


def _mean(values: np.ndarray | None) -> float | None:
    if values is None or not np.isfinite(values).any():
        return None
    return float(np.nanmean(values))


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
        "qlike_realized": _mean(qlike_losses(proxies[0], variance)),
        "qlike_parkinson": _mean(qlike_losses(proxies[1], variance)),
        "coverage": mean,
        "coverage_ci": [low, high],
        "n": n,
        "n_independent": int(len(spaced)),
        "width_pct": float(100 * np.mean(scored.upper - scored.lower)),
        "kupiec_p": None if math.isnan(kupiec_p) else kupiec_p,
        "christoffersen_p": None if math.isnan(ind_p) else ind_p,
    }


Bands = dict[tuple[str, int, str], Scored]


def evaluate_bands(
    series: list[SymbolRuns],
    horizons: tuple[int, ...],
    residual_scale: dict[int, float],
    *,
    seed: int = 0,
    cache: dict[Any, np.ndarray] | None = None,
) -> dict[str, Any]:
    """Every candidate band on every symbol and horizon, in both windows; the band chosen on
    the tune windows; its and every candidate's skill over GARCH(1,1)-t on the test windows.
    ``cache`` keeps the σ series for a later caller (the `unsure` comparison)."""
    cache = {} if cache is None else cache
    judged = [
        sr
        for sr in series
        if sr.ok_runs() and len(sr.windows.test_origins(max(horizons))) >= MIN_TEST_ORIGINS
    ]
    names = candidates(judged)
    out: dict[str, Any] = {
        "candidates": list(names),
        "baseline": BASELINE,
        "symbols": [sr.symbol for sr in judged],
        "too_short": [sr.symbol for sr in series if sr not in judged],
        "rule": RULE,
        "stretch": {},
        "cells": {sr.symbol: {} for sr in judged},
        "pooled": {},
        "terciles": {},
        "tune": {},
        "vs_baseline": {},
        "comparisons": {},
    }
    if not judged:
        out["winner"], out["verdict"] = RESIDUAL, "no symbol has enough history to judge a band"
        return out
    out["params"] = {}
    for name in names:
        if name in volatility.RANGE_EWMA_METHODS:
            out["params"][name] = tune_reversion(judged, name, horizons, cache)
        elif name in volatility.HAR_PANEL_METHODS:
            set_panel(cache, name, judged)
    bands: dict[str, Bands] = {window: {} for window in WINDOWS}
    for h in horizons:
        stretch = {RESIDUAL: residual_scale[h]}
        for method in names[1:]:
            stretch[method] = _tune_stretch(judged, method, h, cache, horizons)
        out["stretch"][str(h)] = stretch
        for window in WINDOWS:
            for sr in judged:
                origins = getattr(sr.windows, f"{window}_origins")(h)
                rep = sr.replayed(LIVE.name, h).select(origins)
                for name in names:
                    bands[window][(sr.symbol, h, name)] = (
                        _residual_band(rep, stretch[name])
                        if name == RESIDUAL
                        else _vol_band(rep, _sigma(sr, name, h, cache), stretch[name])
                    )
        for sr in judged:
            test = bands["test"][(sr.symbol, h, RESIDUAL)]
            proxies = _path_variances(sr, test.origins, h)
            out["cells"][sr.symbol][str(h)] = {
                name: _cell(bands["test"][(sr.symbol, h, name)], proxies, h, seed) for name in names
            }
        out["pooled"][str(h)] = _pooled(judged, bands["test"], names, h, seed)
        out["terciles"][str(h)] = _terciles(judged, bands["test"], names, h)
        out["tune"][str(h)] = _against_baseline(judged, bands["tune"], names, h, seed, qlike=False)
        out["vs_baseline"][str(h)] = _against_baseline(judged, bands["test"], names, h, seed)
    tune_skill = {
        name: {h: out["tune"][h][name]["interval_score_skill"] for h in out["tune"]}
        for name in names
        if name != BASELINE
    }
    out["winner"], out["verdict"] = choose_band(tune_skill, horizons)
    if out["winner"] != RESIDUAL:
        out["served_params"] = served_params(out["winner"], cache)
    out["comparisons"] = _comparisons(judged, bands["test"], horizons, _pairs(out["winner"]), seed)
    out["coverage_tests"] = {
        name: coverage_tests(out["cells"], name)
        for name in dict.fromkeys((out["winner"], BASELINE))
    }
    out["example"] = _example(judged, bands["test"], horizons, out["winner"])
    return out


def _pairs(winner: str) -> list[tuple[str, str]]:
    """The per-symbol comparisons reported: the served band against the baseline and
    today's band, and the earlier report's pairs (for continuity)."""
    wanted = [(winner, BASELINE), (winner, RESIDUAL), ("gjr", RESIDUAL), ("ewma", RESIDUAL),
              ("gjr", "ewma"), ("gjr", BASELINE), ("ewma", BASELINE)]  # fmt: skip
    return [p for p in dict.fromkeys(wanted) if p[0] != p[1]]


def _parts(
    judged: list[SymbolRuns], bands: Bands, h: int, name: str, reference: str,
    loss: Any = None,
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:  # fmt: skip
    """(date keys, loss, reference loss) per symbol for the joint bootstrap."""
    parts = []
    for sr in judged:
        a, b = bands[(sr.symbol, h, name)], bands[(sr.symbol, h, reference)]
        if loss is None:
            la, lb = a.interval_score, b.interval_score
        else:
            la, lb = loss(sr, a), loss(sr, b)
        keep = np.isfinite(la) & np.isfinite(lb)
        parts.append((date_keys(sr, a.origins)[keep], la[keep], lb[keep]))
    return parts


def _against_baseline(
    judged: list[SymbolRuns], bands: Bands, names: tuple[str, ...], h: int, seed: int,
    *, qlike: bool = True,
) -> dict[str, Any]:  # fmt: skip
    """Each candidate's pooled interval score and coverage in a window, and its pooled
    interval-score (and QLIKE) skill over GARCH(1,1)-t with a joint-bootstrap interval."""

    def realized_qlike(sr: SymbolRuns, scored: Scored) -> np.ndarray:
        proxy, _ = _path_variances(sr, scored.origins, h)
        losses = qlike_losses(proxy, scored.implied_variance)
        assert losses is not None
        return losses

    out: dict[str, Any] = {}
    for name in names:
        scored = [bands[(sr.symbol, h, name)] for sr in judged]
        entry: dict[str, Any] = {
            "interval_score": float(np.concatenate([s.interval_score for s in scored]).mean()),
            "coverage": float(np.concatenate([s.hits for s in scored]).mean()),
        }
        if name != BASELINE:
            entry["interval_score_skill"] = joint_skill(
                _parts(judged, bands, h, name, BASELINE), h, seed=seed
            )
            if qlike:
                entry["qlike_skill"] = joint_skill(
                    _parts(judged, bands, h, name, BASELINE, realized_qlike), h, seed=seed
                )
        if qlike:
            losses = [realized_qlike(sr, s) for sr, s in zip(judged, scored, strict=True)]
            entry["qlike_realized"] = float(np.nanmean(np.concatenate(losses)))
        out[name] = entry
    return out


EXAMPLE_SYMBOL, EXAMPLE_HORIZON = "^GSPC", 5


def _example(
    judged: list[SymbolRuns], bands: Bands, horizons: tuple[int, ...], winner: str
) -> dict[str, Any]:
    """One symbol's test window for the figure: the realized move and the edges of today's
    band, the baseline's and the served band's, in % of the origin price, by origin date."""
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
            for name in dict.fromkeys((RESIDUAL, BASELINE, winner))
        },
    }


def _pooled(
    judged: list[SymbolRuns], bands: Bands, names: tuple[str, ...], h: int, seed: int
) -> dict[str, Any]:
    pooled = {}
    for name in names:
        scored = [bands[(sr.symbol, h, name)] for sr in judged]
        hits = [s.hits for s in scored]
        coverage = joint_mean(
            [(date_keys(sr, s.origins), s.hits) for sr, s in zip(judged, scored, strict=True)],
            h,
            seed=seed,
        )
        pooled[name] = {
            "interval_score": float(np.concatenate([s.interval_score for s in scored]).mean()),
            "coverage": coverage["mean"],
            "coverage_ci": coverage["ci"],
            "n": int(sum(len(x) for x in hits)),
            "n_independent": int(sum(len(x) // h for x in hits)),
        }
    return pooled


def _terciles(
    judged: list[SymbolRuns], bands: Bands, names: tuple[str, ...], h: int
) -> dict[str, Any]:
    """Coverage when the trailing 20-day volatility was low, middle, high (per-symbol
    terciles of the test window, pooled), for every candidate."""
    groups: dict[str, list[list[np.ndarray]]] = {name: [[], [], []] for name in names}
    for sr in judged:
        origins = bands[(sr.symbol, h, RESIDUAL)].origins
        vol = _trailing_vol(sr, origins)
        cuts = np.quantile(vol, [1 / 3, 2 / 3])
        tercile = np.searchsorted(cuts, vol, side="right")
        for name in names:
            hits = bands[(sr.symbol, h, name)].hits
            for t in range(3):
                groups[name][t].append(hits[tercile == t])
    return {
        name: [float(np.concatenate(parts).mean()) for parts in tiers]
        for name, tiers in groups.items()
    }


def per_symbol_pooled_skill(
    pairs: list[tuple[np.ndarray, np.ndarray]], horizon: int, seed: int
) -> dict[str, Any]:
    """The earlier pooled interval, kept to show what the joint bootstrap changes: each
    symbol resampled on its own, as if the symbols were independent."""
    rng = np.random.default_rng(seed)
    sums = np.zeros((N_BOOT, 2))
    total = np.zeros(2)
    n_eff = 0
    for loss, reference in pairs:
        block = bootstrap_block(len(loss), horizon)
        sums += block_sums(np.column_stack([loss, reference]), block, N_BOOT, rng)
        total += [loss.sum(), reference.sum()]
        n_eff += len(loss) // horizon
    low, high = percentile_interval(1 - sums[:, 0] / sums[:, 1])
    return {"skill": float(1 - total[0] / total[1]), "ci": [low, high], "n_independent": n_eff}


def _comparisons(
    judged: list[SymbolRuns],
    bands: Bands,
    horizons: tuple[int, ...],
    pairs: list[tuple[str, str]],
    seed: int,
) -> dict[str, Any]:
    """Interval-score skill of each pair per symbol and horizon: bootstrap interval, the
    fixed-b DM p-value (and the earlier n^(1/3)-lag DM-HLN one), and whether each stands
    after Holm over the pair's symbol × horizon cells; pooled with the joint bootstrap (and
    the earlier per-symbol one)."""
    out: dict[str, Any] = {}
    available = {name for (_, _, name) in bands}
    for name, reference in pairs:
        if name not in available or reference not in available:
            continue
        rows: list[dict[str, Any]] = []
        for h in horizons:
            symbol_pairs = []
            for sr in judged:
                loss = bands[(sr.symbol, h, name)].interval_score
                base = bands[(sr.symbol, h, reference)].interval_score
                symbol_pairs.append((loss, base))
                block = bootstrap_block(len(loss), h)
                sums = block_sums(np.column_stack([loss, base]), block, N_BOOT,
                                  np.random.default_rng(seed))  # fmt: skip
                low, high = percentile_interval(1 - sums[:, 0] / sums[:, 1])
                test, old = dm_fixed_b(loss, base, h), dm_hln(loss, base, h)
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
                        "p_value_short_lag": old.p_value,
                        "lag_short": old.lag,
                    }
                )
            out.setdefault(f"{name}_vs_{reference}_pooled", {})[str(h)] = {
                **joint_skill(_parts(judged, bands, h, name, reference), h, seed=seed),
                "per_symbol_bootstrap": per_symbol_pooled_skill(symbol_pairs, h, seed),
                "n_independent": sum(len(loss) // h for loss, _ in symbol_pairs),
            }
        for key, suffix in (("p_value", ""), ("p_value_short_lag", "_short_lag")):
            stands = holm([row[key] for row in rows])
            for row, ok in zip(rows, stands, strict=True):
                row[f"better_after_holm{suffix}"] = bool(ok and row["skill"] > 0)
                row[f"worse_after_holm{suffix}"] = bool(ok and row["skill"] < 0)
        out[f"{name}_vs_{reference}"] = rows
    return out


def band_table(bands: dict[str, Any]) -> dict[str, Any]:
    """The ``band`` block of calibration.json: the chosen method, its stretch, and the
    coverage it and today's band reached per symbol and pooled (with n and interval); how
    it was chosen, and its skill over GARCH(1,1)-t on the test windows."""
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
    versus = {
        h: {k: v for k, v in by_name[method].items() if k.endswith("_skill")}
        for h, by_name in bands.get("vs_baseline", {}).items()
        if method in by_name
    }
    tests = (bands.get("coverage_tests") or {}).get(method) or {}
    return {
        "method": method,
        "params": bands.get("served_params") or {},
        "stretch": stretch,
        "coverage": coverage,
        "pooled": pooled,
        "verdict": bands["verdict"],
        "rule": bands.get("rule"),
        "chosen_on": "tune windows",
        "baseline": BASELINE,
        "skill_vs_baseline": versus,
        "coverage_tests_rejected": tests.get("rejected"),
    }
