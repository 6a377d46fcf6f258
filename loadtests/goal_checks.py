"""The issue's targets, checked against what a run measured (one line per target).

- without emulation, `chord` cold p50 ≤ 1.15 × its slowest stage alone (the critical
  path); "alone" is that stage's p50 under `centralized` with one worker, where every
  stage runs by itself, one after another;
- with emulated remote latency and n workers for n tasks, `chord` p50 ≤ 0.6 × `centralized`;
- `cascade` spends less model time than `chord` at no worse backtest error (MASE).

A model's cost grows with the length of the symbol's history, so latencies are compared
symbol by symbol and the median of the per-symbol ratios is the verdict. The overhead
target (chord of 8 no-ops ≤ 1.2 × a bare Celery chord) is `lab/bench_overhead.py`'s.
"""

from __future__ import annotations

from typing import Any

from loadtests.latencies import percentile

MASE_TOLERANCE = 0.005  # "no worse": within 0.5 % of the chord's backtest MASE


def _find(
    configs: list[dict[str, Any]],
    strategy: str,
    workers: int | None = None,
    profile: str | None = None,
) -> dict[str, Any] | None:
    found = [
        c
        for c in configs
        if c["strategy"] == strategy
        and (workers is None or c["workers"] == workers)
        and (profile is None or c["profile"] == profile)
        and c["client"]["p50_ms"] is not None
    ]
    return max(found, key=lambda c: c["workers"]) if found else None


def _verdict(ok: bool) -> str:
    return "**met**" if ok else "**not met**"


def ratio_by_symbol(
    numerators: dict[str, float | None], denominators: dict[str, float | None]
) -> tuple[float, list[str]] | None:
    """Median over the common symbols of numerator / denominator, and those symbols."""
    common = sorted(s for s in numerators if numerators[s] and denominators.get(s))
    if not common:
        return None
    ratios = [numerators[s] / denominators[s] for s in common]  # type: ignore[operator]
    return percentile(ratios, 50) or 0.0, common


def critical_path(configs: list[dict[str, Any]]) -> str | None:
    alone = _find(configs, "centralized", 1, "off")
    if alone is None:
        return None
    n = alone["n_tasks"]
    chord = _find(configs, "chord", n, "off") or _find(configs, "chord", None, "off")
    if chord is None:
        return None
    slowest = {s: v["slowest_stage_p50_ms"] for s, v in alone["server"]["by_symbol"].items()}
    found = ratio_by_symbol(chord["client"]["p50_by_symbol"], slowest)
    if found is None:
        return None
    ratio, symbols = found
    return (
        f"chord cold p50 without emulation ({chord['label']}) = {ratio:.2f} × the slowest stage "
        f"alone (p50 under {alone['label']}; median of the ratios over {', '.join(symbols)}; "
        f"overall {chord['client']['p50_ms']:,.0f} ms vs "
        f"{alone['server']['slowest_stage_p50_ms']:,.0f} ms); target ≤ 1.15: "
        f"{_verdict(ratio <= 1.15)}"
    )


def emulated_speedup(configs: list[dict[str, Any]]) -> list[str]:
    lines = []
    for chord in configs:
        if chord["strategy"] != "chord" or chord["profile"] == "off":
            continue
        if chord["workers"] < chord["n_tasks"]:
            continue
        central = _find(configs, "centralized", chord["workers"], chord["profile"])
        if central is None:
            continue
        found = ratio_by_symbol(
            chord["client"]["p50_by_symbol"], central["client"]["p50_by_symbol"]
        )
        if found is None:
            continue
        ratio, symbols = found
        lines.append(
            f"with emulated latency {chord['profile']} ms and {chord['workers']} workers for "
            f"{chord['n_tasks']} tasks: chord p50 = {ratio:.2f} × centralized (median of the "
            f"ratios over {', '.join(symbols)}; overall {chord['client']['p50_ms']:,.0f} vs "
            f"{central['client']['p50_ms']:,.0f} ms); target ≤ 0.6: {_verdict(ratio <= 0.6)}"
        )
    return lines


def _common_mase(a: dict[str, Any], b: dict[str, Any]) -> tuple[float, float] | None:
    """Mean backtest MASE of two configurations over the symbols both measured."""
    first = a.get("ensemble_mase_by_symbol") or {}
    second = b.get("ensemble_mase_by_symbol") or {}
    common = sorted(set(first) & set(second))
    if not common:
        return None
    return (
        sum(first[s] for s in common) / len(common),
        sum(second[s] for s in common) / len(common),
    )


def cascade_saving(configs: list[dict[str, Any]]) -> list[str]:
    lines = []
    for cascade in [c for c in configs if c["strategy"] == "cascade"]:
        chord = _find(configs, "chord", cascade["workers"], cascade["profile"])
        if chord is None:
            continue
        cs, ch = cascade["server"], chord["server"]
        mase = _common_mase(cs, ch)
        if not cs["model_ms_mean"] or not ch["model_ms_mean"] or mase is None:
            continue
        saving = 1 - cs["model_ms_mean"] / ch["model_ms_mean"]
        rate = cs["escalation_rate"]
        escalated = "–" if rate is None else f"{rate:.0%}"
        no_worse = mase[0] <= mase[1] * (1 + MASE_TOLERANCE)
        lines.append(
            f"{cascade['label']} vs {chord['label']}: model time {cs['model_ms_mean']:,.0f} vs "
            f"{ch['model_ms_mean']:,.0f} ms per request ({saving:.0%} less; the deep models ran "
            f"for {escalated} of requests), backtest MASE {mase[0]:.3f} vs {mase[1]:.3f} on the "
            f"same symbols (no worse = within {MASE_TOLERANCE:.1%}): "
            f"{_verdict(saving > 0 and no_worse)}"
        )
    return lines


def evaluate(configs: list[dict[str, Any]]) -> list[str]:
    lines = [line for line in [critical_path(configs)] if line]
    return lines + emulated_speedup(configs) + cascade_saving(configs)
