"""`make -C lab users-first`'s judging and report, apart from the stacks so that they are
tested on built numbers: each run's questions with the background work on are judged
against the same run's with it off (the machine's speed cancels out of the ratio), and the
counts say the background work was only delayed, never dropped.
"""

from __future__ import annotations

from typing import Any

from loadtests.latencies import percentile
from loadtests.report import fmt

P50_MS, P95_MS = 100.0, 150.0  # the issue's goals for a new horizon on unchanged data
WITHIN = 1.10  # on / off, for p50 and p95 alike, and the first question / its cold time
SHADOW_SUFFIX = "~shadow"  # registry.generations.SHADOW_SUFFIX (no Django in the lab)
WORD = {True: "met", False: "missed"}
Key = tuple[str, int, str]  # a forecast of record's (symbol, horizon, as-of bar)


def latency_summary(latencies: list[float]) -> dict[str, float]:
    return {
        "p50_ms": percentile(latencies, 50) or 0.0,
        "p95_ms": percentile(latencies, 95) or 0.0,
        "max_ms": max(latencies, default=0.0),
    }


def covered(spans: list[tuple[float, float]]) -> float:
    """The time inside at least one of `spans` (stages run side by side)."""
    total, reached = 0.0, float("-inf")
    for start, end in sorted(spans):
        total += max(0.0, end - max(start, reached))
        reached = max(reached, end)
    return total


def stage_summary(answered: list[tuple[float, dict[str, Any]]]) -> dict[str, float]:
    """Where the answers' time went, median ms: each stage's run, and what no stage ran
    (the web's part, the queues and the hand-offs between stages): where background
    work's delay shows."""
    runs: dict[str, list[float]] = {}
    outside = []
    for latency_ms, prediction in answered:
        stages = prediction.get("stages") or []
        for stage in stages:
            runs.setdefault(stage["stage"], []).append(stage["duration_ms"])
        if stages:
            outside.append(latency_ms - 1000 * covered([(s["started_at"], s["finished_at"])
                                                        for s in stages]))  # fmt: skip
    summary = {name: percentile(ms, 50) or 0.0 for name, ms in sorted(runs.items())}
    return {**summary, "outside stages": percentile(outside, 50) or 0.0}


def shadow_counts(
    answers: list[tuple[Key, dict[str, Any]]], records: dict[Key, dict[str, Any]]
) -> tuple[int, int]:
    """(made, expected): every shadow a finished answer asked for (one per model that
    answered while the registry judged its new recipe) against the shadows its forecast
    of record carries now."""
    expected = {
        (key, run["model"])
        for key, result in answers
        for run in result.get("models", [])
        if run.get("ok") and (run.get("registry") or {}).get("judging")
    }
    made = sum(f"{model}{SHADOW_SUFFIX}" in records.get(key, {}) for key, model in expected)
    return made, len(expected)


def refresh_counts(
    pipelines: list[tuple[str, int, str]], watched: list[tuple[str, int]]
) -> dict[str, int]:
    """The watchlist's questions one of its own pipelines answered, against its questions
    (those its share of admission held back count until they are asked and answered);
    its pipelines (symbol, horizon, status) in flight and failed."""
    done = {(symbol, horizon) for symbol, horizon, status in pipelines if status == "done"}
    return {
        "refreshes_asked": len(set(watched)),
        "refreshes_done": len(done & set(watched)),
        "refreshes_in_flight": sum(status in ("queued", "running") for *_, status in pipelines),
        "refreshes_failed": sum(status == "failed" for *_, status in pipelines),
    }


def judge(on: dict[str, Any], off: dict[str, Any]) -> dict[str, bool]:
    """Each goal of one run, met or not. A count of nothing expected is missed: the run
    did not make the background work it is about."""
    return {
        f"p50 ≤ {P50_MS:.0f} ms": on["p50_ms"] <= P50_MS,
        f"p95 ≤ {P95_MS:.0f} ms": on["p95_ms"] <= P95_MS,
        "p50 and p95 within 10 % of off": on["p50_ms"] <= WITHIN * off["p50_ms"]
        and on["p95_ms"] <= WITHIN * off["p95_ms"],
        "first question ≤ 1.1 × cold": on["first_ms"] <= WITHIN * off["first_ms"],
        "every shadow made": 0 < on["shadows_expected"] == on["shadows_made"],
        "every watchlist refresh made": 0 < on["refreshes_asked"] == on["refreshes_done"],
    }


def run_table(number: int, run: dict[str, Any]) -> list[str]:
    on, off = run["on"], run["off"]
    lines = [
        f"## Run {number} ({' then '.join(run['order'])})",
        "",
        "| configuration | p50 ms | p95 ms | max ms | p50 / p95 vs off | first question ms "
        "| shadows made / expected | refreshes done / asked | watchlist in flight at start "
        "/ end | shadows pending | load average |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, side in (("on", on), ("off", off)):
        p50, p95 = side["p50_ms"] / off["p50_ms"], side["p95_ms"] / off["p95_ms"]
        first = side["first_ms"] / off["first_ms"]
        lines.append(
            f"| {name} | {fmt(side['p50_ms'], 1)} | {fmt(side['p95_ms'], 1)} | "
            f"{fmt(side['max_ms'], 1)} | {p50:.2f} / {p95:.2f} | {fmt(side['first_ms'])} "
            f"({first:.2f} × cold) | {side['shadows_made']} / {side['shadows_expected']} | "
            f"{side['refreshes_done']} / {side['refreshes_asked']} | "
            f"{' / '.join(map(str, side['watchlist_in_flight']))} | "
            f"{side['pending']['shadows']} of {side['pending']['models']} models | "
            f"{side['load_average']} |"
        )
    if "cpu_ms_per_question" in off:
        lines += ["", "| ms per question | CPU: the questions' processes | their wait for a "
                  "core | CPU: the spare worker | cores busy |",
                  "| --- | --- | --- | --- | --- |"]  # fmt: skip
        for name, side in (("on", on), ("off", off)):
            used = side["cpu_ms_per_question"]
            waited = fmt(used.get("questions waiting", 0.0), 1)
            lines.append(f"| {name} | {fmt(used['questions'], 1)} | {waited} | "
                         f"{fmt(used['spare'], 1)} | {side['cores_busy']:.2f} |")  # fmt: skip
    names = list(off.get("stages_ms", {}))
    if names:
        lines += ["", "| median ms | " + " | ".join(names) + " |",
                  "| --- |" + " --- |" * len(names)]  # fmt: skip
        for name, side in (("on", on), ("off", off)):
            row = [fmt(side["stages_ms"].get(stage, 0.0), 1) for stage in names]
            lines.append(f"| {name} | " + " | ".join(row) + " |")
    lines += ["", "| goal | verdict |", "| --- | --- |"]
    lines += [f"| {goal} | {WORD[ok]} |" for goal, ok in run["verdicts"].items()]
    return [*lines, ""]


def report(results: dict[str, Any]) -> str:
    m = results["machine"]
    runs = results["runs"]
    every = {goal: all(r["verdicts"][goal] for r in runs) for goal in runs[0]["verdicts"]}
    lines = [
        f"# `make -C lab users-first`, {results['date']}",
        "",
        f"Commit {results['commit']}; {m['cores']} cores, {m['cpu']}; load average before "
        f"{m['load_average']}, after {results['machine_after']['load_average']}. Command: "
        f"`{results['command']}`.",
        "",
        f"On: the watchlist and shadow generations {results.get('on', 'as shipped')}, a "
        f"shadow pending for every model, on {results.get('database', 'sqlite')}. Off: "
        f"`{results['off']}`. Each: {results['symbol']} "
        "at horizons "
        f"{results['horizons'][0]}–{results['horizons'][-1]} (`use_cache: false`) one after "
        "another, after one warm-up question; the first question is the first one a fresh "
        "stack is asked, at once (cold), off's is the cold time.",
        "",
        *[line for i, run in enumerate(runs, 1) for line in run_table(i, run)],
        f"## In every run ({len(runs)})",
        "",
        "| goal | verdict |",
        "| --- | --- |",
        *[f"| {goal} | {WORD[ok]} |" for goal, ok in every.items()],
    ]
    return "\n".join(lines) + "\n"
