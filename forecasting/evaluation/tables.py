"""Markdown tables of a nested-evaluation report (see forecasting/evaluation/evaluate.py).

Why: the report is JSON for machines; people read tables. The generated block of
docs/evaluation.md is rewritten from them, the prose around it is not touched.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from forecasting.evaluation.coverage_tests import verdict as coverage_verdict
from forecasting.volatility import BASELINE, LABELS

BEGIN, END = "<!-- evaluate:begin -->", "<!-- evaluate:end -->"
MARK = {"better": " ▲", "worse": " ▼"}


def _pct(value: float | None, digits: int = 1, signed: bool = False) -> str:
    if value is None:
        return "–"
    return f"{100 * value:+.{digits}f}" if signed else f"{100 * value:.{digits}f}"


def _num(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _skill(row: dict[str, Any]) -> str:
    if row["skill_ci"] is None:
        return "ref." if row["verdict"] == "reference" else "–"
    low, high = row["skill_ci"]
    mark = MARK.get(row["verdict"], "")
    interval = f"({_pct(low, signed=True)}, {_pct(high, signed=True)})"
    return f"{_pct(row['skill_vs_naive'], signed=True)} {interval}{mark}"


def _ci(entry: dict[str, Any]) -> str:
    if entry["coverage"] is None:
        return "–"
    low, high = entry["ci"]
    return f"{_pct(entry['coverage'], 0)} ({_pct(low, 0)}–{_pct(high, 0)})"


def windows_table(report: dict[str, Any]) -> str:
    """Where each symbol's tune and test windows lie."""
    lines = [
        "| symbol | tune window (origins) | test window (origins) | tune bars | test bars | "
        "refresh every | deep models | seen until (then held out) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    held = (report.get("held_out") or {}).get("bars")
    for symbol, w in report["windows"].items():
        modes = w["model_modes"].get("lstm") or []
        deep = (
            f"{modes.count('trained')} fits, {modes.count('fine-tuned')} fine-tunes"
            if modes
            else "–"
        )
        lines.append(
            f"| {symbol} | {w['start']} → {w['boundary']} | {w['boundary']} → {w['end']} | "
            f"{w['tune_bars']} | {w['test_bars']} | {w['refit_every']} bars | {deep} | "
            f"{w['end']}" + (f" (+{held} bars)" if held else "") + " |"
        )
    for symbol, why in ((report.get("held_out") or {}).get("skipped") or {}).items():
        lines.append(f"| {symbol} | – | – | – | – | – | – | skipped: {why} |")
    return "\n".join(lines)


def skill_matrix(report: dict[str, Any], horizon: str) -> str:
    """Skill versus naive (percent, 95 % interval) per symbol and model, one horizon."""
    names: list[str] = []
    for by_h in report["scores"].values():
        for row in by_h[horizon]["rows"]:
            if row["model"] not in names:
                names.append(row["model"])
    lines = [
        "| symbol | naive MAE % | " + " | ".join(n for n in names if n != "naive") + " |",
        "|---|---|" + "---|" * (len(names) - 1),
    ]
    for symbol, by_h in report["scores"].items():
        rows = {r["model"]: r for r in by_h[horizon]["rows"]}
        naive = rows.get("naive")
        cells = [_skill(rows[n]) if n in rows else "–" for n in names if n != "naive"]
        lines.append(
            f"| {symbol} | {_num(naive and naive['mae_pct'], 2)} | " + " | ".join(cells) + " |"
        )
    return "\n".join(lines)


def detail_table(report: dict[str, Any], horizon: str) -> str:
    """Every metric of every row, one horizon."""
    lines = [
        "| symbol | model | origins | MAE % | MAE / no-change MAE | dir. acc. (always up; p) | "
        "skill vs naive % (95 % CI) | DM-HLN p | verdict | after Holm |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for symbol, by_h in report["scores"].items():
        table = by_h[horizon]
        for row in table["rows"]:
            lines.append(
                f"| {symbol} | {row['model']} | {row['n_origins']} | {_num(row['mae_pct'], 2)} | "
                f"{_num(row['relative_mae'])} | {_num(row['directional_accuracy'], 2)} "
                f"({_num(row['direction_always_up'], 2)}; {_num(row['direction_p_value'], 3)}) | "
                f"{_skill(row)} | {_num(row['dm_p_value'], 3)} | {row['verdict']} | "
                f"{row.get('after_holm', '–')} |"
            )
        for failed in table["failed"]:
            lines.append(
                f"| {symbol} | {failed['model']} | – | – | – | – | – | – | {failed['error']} | – |"
            )
    return "\n".join(lines)


def coverage_table(report: dict[str, Any]) -> str:
    """Day-h coverage of the 80 % band on the test windows, before and after calibration."""
    lines = [
        "| horizon | symbol | before (legacy band) | live band, unstretched | "
        "calibrated (95 % CI) | calibrated width % |",
        "|---|---|---|---|---|---|",
    ]
    for horizon, table in report["coverage"].items():
        for symbol, entry in table["per_symbol"].items():
            lines.append(
                f"| {horizon} | {symbol} | {_ci(entry['legacy'])} | {_ci(entry['unstretched'])} | "
                f"{_ci(entry['calibrated'])} | {_num(entry['width_pct'], 1)} |"
            )
        pooled = table["pooled"]
        lines.append(
            f"| {horizon} | **all** (stretch ×{table['scale']:.3f}) | "
            f"**{_pct(pooled['legacy'], 1)}** | **{_pct(pooled['unstretched'], 1)}** | "
            f"**{_pct(pooled['calibrated'], 1)}** | |"
        )
    return "\n".join(lines)


BAND_NAMES = {"residual": "today's (residual)", **LABELS}


def _name(name: str) -> str:
    return BAND_NAMES.get(name, name)


def _interval(entry: dict[str, Any] | None, digits: int = 1) -> str:
    """ "+4.5 (+3.0, +6.0)" from {"skill", "ci"}, in percent."""
    if not entry:
        return "–"
    low, high = entry["ci"]
    return (f"{_pct(entry['skill'], digits, signed=True)} "
            f"({_pct(low, digits, signed=True)}, {_pct(high, digits, signed=True)})")  # fmt: skip


def band_pooled_table(report: dict[str, Any]) -> str:
    """Every candidate band pooled over the judged symbols: score, coverage, stretch."""
    bands = report["bands"]
    lines = [
        "| horizon | band | interval score (α = 0.2) | coverage % (95 % CI) | n (independent) "
        "| stretch | coverage by volatility tercile % (calm / middle / storm) |",
        "|---|---|---|---|---|---|---|",
    ]
    for h, pooled in bands.get("pooled", {}).items():
        for name, entry in pooled.items():
            low, high = entry["coverage_ci"]
            terciles = " / ".join(_pct(x, 1) for x in bands["terciles"][h][name])
            lines.append(
                f"| {h} | {_name(name)} | {entry['interval_score']:.2f} | "
                f"{_pct(entry['coverage'])} ({_pct(low)}–{_pct(high)}) | {entry['n']} "
                f"({entry['n_independent']}) | {bands['stretch'][h][name]:.3f} | {terciles} |"
            )
    return "\n".join(lines)


def band_skill_table(report: dict[str, Any], name: str, reference: str) -> str:
    """Interval-score skill of one band over another per symbol and horizon: the fixed-b DM
    test (and the earlier n^(1/3)-lag DM-HLN one beside it), Holm over the pair's cells;
    pooled with the joint date-block bootstrap (and the earlier per-symbol one)."""
    bands = report["bands"]
    rows = bands["comparisons"].get(f"{name}_vs_{reference}", [])
    pooled = bands["comparisons"].get(f"{name}_vs_{reference}_pooled", {})
    lines = [
        "| horizon | symbol | skill % (95 % CI) | fixed-b DM p (bandwidth) | after Holm | "
        "earlier: DM-HLN p (lag) | after Holm |",
        "|---|---|---|---|---|---|---|",
    ]

    def verdict(row: dict[str, Any], suffix: str = "") -> str:
        if row[f"better_after_holm{suffix}"]:
            return "better"
        return "worse" if row[f"worse_after_holm{suffix}"] else "not significant"

    for row in rows:
        low, high = row["ci"]
        lines.append(
            f"| {row['horizon']} | {row['symbol']} | {_pct(row['skill'], signed=True)} "
            f"({_pct(low, signed=True)}, {_pct(high, signed=True)}) | {row['p_value']:.4f} "
            f"({row['lag'] + 1}) | {verdict(row)} | {row['p_value_short_lag']:.4f} "
            f"({row['lag_short']}) | {verdict(row, '_short_lag')} |"
        )
    for h, entry in pooled.items():
        old = entry["per_symbol_bootstrap"]
        lines.append(
            f"| {h} | **pooled** | **{_interval(entry)}** joint, blocks of {entry['block']} "
            f"dates | earlier, symbols resampled apart: {_interval(old)} | | "
            f"{entry['n_independent']} independent paths | |"
        )
    return "\n".join(lines)


def significant_cells(report: dict[str, Any], name: str, reference: str) -> tuple[int, int, int]:
    """(cells better after Holm with the fixed-b test, with the earlier test, cells)."""
    rows = report["bands"]["comparisons"].get(f"{name}_vs_{reference}", [])
    return (sum(r["better_after_holm"] for r in rows),
            sum(r["better_after_holm_short_lag"] for r in rows), len(rows))  # fmt: skip


def tune_choice_table(report: dict[str, Any]) -> str:
    """The data the served band was chosen on: every candidate's pooled tune-window
    interval score and skill over GARCH(1,1)-t (joint bootstrap interval)."""
    bands = report["bands"]
    horizons = list(bands["tune"])
    lines = [
        "| band | " + " | ".join(f"{h} d: score / skill % (95 % CI)" for h in horizons) + " |",
        "|---|" + "---|" * len(horizons),
    ]
    for name in bands["candidates"]:
        cells = []
        for h in horizons:
            e = bands["tune"][h][name]
            skill = "baseline" if name == BASELINE else _interval(e["interval_score_skill"])
            cells.append(f"{e['interval_score']:.2f} / {skill}")
        mark = " **(served)**" if name == bands["winner"] else ""
        phi = ((bands.get("params") or {}).get(name) or {}).get("phi")
        tuned = f" (φ = {phi})" if phi is not None else ""
        lines.append(f"| {_name(name)}{tuned}{mark} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def baseline_table(report: dict[str, Any]) -> str:
    """Every candidate against GARCH(1,1)-t on the test windows: pooled interval score and
    QLIKE, and their skill with joint date-block bootstrap intervals."""
    bands = report["bands"]
    lines = [
        "| horizon | band | interval score | skill % (95 % CI) | QLIKE (realized) | "
        "QLIKE skill % (95 % CI) | coverage % |",
        "|---|---|---|---|---|---|---|",
    ]
    for h, by_name in bands["vs_baseline"].items():
        for name in bands["candidates"]:
            e = by_name[name]
            base = name == BASELINE
            lines.append(
                f"| {h} | {_name(name)}{' **(served)**' if name == bands['winner'] else ''} | "
                f"{e['interval_score']:.2f} | "
                f"{'baseline' if base else _interval(e['interval_score_skill'])} | "
                f"{e['qlike_realized']:.3f} | {'baseline' if base else _interval(e['qlike_skill'])}"
                f" | {_pct(e['coverage'])} |"
            )
    return "\n".join(lines)


def coverage_tests_table(report: dict[str, Any], band: str) -> str:
    """A band's Kupiec and Christoffersen tests per symbol and horizon, with Holm."""
    result = report["bands"]["coverage_tests"][band]
    lines = [
        "| horizon | symbol | coverage % | independent paths | Kupiec p | after Holm | "
        "Christoffersen p | after Holm |",
        "|---|---|---|---|---|---|---|---|",
    ]

    def mark(row: dict[str, Any], name: str) -> str:
        return "**rejects**" if row.get(f"{name}_rejects") else "stands"

    for row in sorted(result["rows"], key=lambda r: (r["horizon"], r["symbol"])):
        lines.append(
            f"| {row['horizon']} | {row['symbol']} | {_pct(row['coverage'])} | "
            f"{row['n_independent']} | {_num(row['kupiec_p'], 4)} | {mark(row, 'kupiec')} | "
            f"{_num(row['christoffersen_p'], 4)} | {mark(row, 'christoffersen')} |"
        )
    return "\n".join(lines)


def band_summary(report: dict[str, Any]) -> list[str]:
    """The few sentences a reader needs first: which band, chosen how and on what data; its
    skill over GARCH(1,1)-t; its coverage tests; what the stricter HAC test changed."""
    bands = report.get("bands") or {}
    if not bands.get("pooled"):
        return []
    winner = bands["winner"]
    windows = report["windows"]
    tune_span = ", ".join(
        f"{s} {windows[s]['start']} → {windows[s]['boundary']}" for s in bands["symbols"]
    )
    lines = [
        f"* **Served band: {_name(winner)}.** {bands['verdict'][0].upper()}{bands['verdict'][1:]}.",
        f"* **Rule** ({bands['rule']}). **Data:** the tune windows ({tune_span}); nothing "
        "from the test windows goes into the choice.",
    ]
    if winner != BASELINE and winner in next(iter(bands["vs_baseline"].values())):
        parts = []
        for h, by_name in bands["vs_baseline"].items():
            e = by_name[winner]
            parts.append(
                f"{_interval(e['interval_score_skill'])} interval score, "
                f"{_interval(e['qlike_skill'])} QLIKE at {h} d"
            )
        lines.append(
            f"* **Against GARCH(1,1)-t on the test windows** (joint date-block bootstrap "
            f"95 % intervals), {_name(winner)}: " + "; ".join(parts) + "."
        )
    else:
        lines.append("* The served band *is* GARCH(1,1)-t, the baseline.")
    lines.append(served_line(bands))
    for band in bands.get("coverage_tests", {}):
        label = f"{_name(band)} ({'served' if band == winner else 'baseline'})"
        lines.append("* **Coverage tests**, " + coverage_verdict(bands["coverage_tests"][band],
                                                                 label) + ".")  # fmt: skip
    holm, short = report.get("holm"), report.get("holm_short_lag")
    if holm and short:
        lines.append(
            f"* **Point forecasts against naive** (fixed-b DM, Holm over {holm['tests']} "
            f"cells): {holm['better']} better, {holm['worse']} worse; the earlier n^(1/3)-lag "
            f"test: {short['better']} better, {short['worse']} worse."
        )
    key = f"{winner}_vs_residual"
    if key in bands["comparisons"]:
        new, old, cells = significant_cells(report, winner, "residual")
        lines.append(
            f"* **HAC bandwidth:** per symbol, {_name(winner)} beats today's band in {new} of "
            f"{cells} symbol × horizon cells after Holm with the fixed-b test (Bartlett, "
            f"bandwidth max(h, ⌈1.3 √n⌉)), where the earlier n^(1/3)-lag DM-HLN test "
            f"would claim {old}."
        )
    return lines


def served_line(bands: dict[str, Any]) -> str:
    """The served band on the test windows in one line: its form (a tuned reversion φ),
    its interval-score skill over GARCH(1,1)-t and its coverage by volatility tercile at
    every horizon."""
    winner = bands["winner"]
    parts = []
    for h, by_name in bands["vs_baseline"].items():
        skill = by_name.get(winner, {}).get("interval_score_skill")
        terciles = " / ".join(_pct(x, 1) for x in bands["terciles"][h][winner])
        parts.append(f"{h} d: skill {_interval(skill) if skill else 'baseline'}, "
                     f"coverage {terciles} %")  # fmt: skip
    phi = (bands.get("served_params") or {}).get("phi")
    form = f" (reversion φ = {phi}, tuned on the tune windows)" if phi is not None else ""
    return (
        f"* **Served band on the test windows**, {_name(winner)}{form} — interval-score "
        "skill over GARCH(1,1)-t (95 % interval) and coverage by trailing 20-day volatility "
        "tercile (calm / middle / storm): " + "; ".join(parts) + "."
    )


def band_cells_table(report: dict[str, Any]) -> str:
    """Per symbol and horizon: each band's coverage (n), interval score, pinball loss,
    QLIKE and the Kupiec / Christoffersen p-values."""
    bands = report["bands"]
    lines = [
        "| horizon | symbol | band | coverage % (n) | interval score | pinball | "
        "QLIKE (realized) | QLIKE (Parkinson) | Kupiec p | Christoffersen p |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for symbol, by_h in bands.get("cells", {}).items():
        for h, cells in by_h.items():
            for name, c in cells.items():
                lines.append(
                    f"| {h} | {symbol} | {_name(name)} | {_pct(c['coverage'])} "
                    f"({c['n']}) | {c['interval_score']:.2f} | {c['pinball']:.3f} | "
                    f"{_num(c['qlike_realized'])} | {_num(c['qlike_parkinson'])} | "
                    f"{_num(c['kupiec_p'], 3)} | {_num(c['christoffersen_p'], 3)} |"
                )
    return "\n".join(lines)


def unsure_table(report: dict[str, Any]) -> str:
    """Realized error of unsure versus sure forecasts on the test windows."""
    lines = [
        "| horizon | rule | threshold (day-h spread) | flagged | unsure error % | sure error % | "
        "ratio (95 % CI) |",
        "|---|---|---|---|---|---|---|",
    ]
    for horizon, rules in report["unsure"].items():
        for label, entry in rules.items():
            ci = entry["ratio_ci"]
            ratio = "–" if entry["error_ratio"] is None else f"{entry['error_ratio']:.2f}"
            if ci:
                ratio += f" ({ci[0]:.2f}–{ci[1]:.2f})"
            lines.append(
                f"| {horizon} | {label} | {_pct(entry['threshold'], 2)} % | "
                f"{_pct(entry['flag_rate'], 0)} % | {_num(entry['unsure_error_pct'], 2)} | "
                f"{_num(entry['sure_error_pct'], 2)} | {ratio} |"
            )
    return "\n".join(lines)


def unsure_rules_table(report: dict[str, Any]) -> str:
    """Each candidate rule for `unsure`, tuned to the same flag share of the tune windows."""
    lines = [
        "| horizon | rule | tune: flagged / error ratio | test: flagged / error ratio (95 % CI) |",
        "|---|---|---|---|",
    ]
    for horizon, comparison in (report.get("unsure_rules") or {}).items():
        for rule, entry in comparison["rules"].items():
            tune, test = entry["tune"], entry["test"]
            ci = test["ratio_ci"]
            interval = f" ({ci[0]:.2f}–{ci[1]:.2f})" if ci else ""
            lines.append(
                f"| {horizon} | {rule} | {_pct(tune['flag_rate'], 0)} % / "
                f"{_num(tune['error_ratio'], 2)} | {_pct(test['flag_rate'], 0)} % / "
                f"{_num(test['error_ratio'], 2)}{interval} |"
            )
    return "\n".join(lines)


def unsure_by_symbol(report: dict[str, Any]) -> str:
    """The tuned rule's flag rate and error ratio within each symbol."""
    symbols = list(report["windows"])
    lines = ["| horizon | " + " | ".join(symbols) + " |", "|---|" + "---|" * len(symbols)]
    for horizon, rules in report["unsure"].items():
        cells = []
        for symbol in symbols:
            entry = rules["tuned"]["per_symbol"][symbol]
            ratio = "–" if entry["error_ratio"] is None else f"{entry['error_ratio']:.2f}"
            cells.append(f"{_pct(entry['flag_rate'], 0)} % / {ratio}")
        lines.append(f"| {horizon} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def headline(report: dict[str, Any]) -> str:
    """The generated block of docs/evaluation.md: the tables a reader needs first."""
    run = report["run"]
    parts = [
        f"Generated by `{run['command']}` on {run['date']} ({run['machine']}, load average "
        f"{run['load_average']}, {run['seconds']} s; seed {run['seed']}).",
        "",
        *([*band_summary(report), ""] if band_summary(report) else []),
        "**Windows**",
        "",
        windows_table(report),
        "",
    ]
    for horizon in report["horizons"]:
        parts += [
            f"**Skill versus naive, horizon {horizon}** — percent, 95 % block-bootstrap "
            "interval; ▲/▼ = significantly better/worse",
            "",
            skill_matrix(report, str(horizon)),
            "",
        ]
    bands = report.get("bands") or {}
    if bands.get("pooled"):
        winner = bands["winner"]
        parts += [
            f"**The band: chosen on the tune windows** ({', '.join(bands['symbols'])}; too "
            f"little history: {', '.join(bands['too_short']) or 'none'}) — pooled interval "
            "score (α = 0.2, % of the origin price) and skill over GARCH(1,1)-t with a joint "
            f"date-block bootstrap 95 % interval. **Served: {_name(winner)}** — "
            f"{bands['verdict']}.",
            "",
            tune_choice_table(report),
            "",
            "**Against GARCH(1,1)-t on the test windows** (untouched by the choice) — pooled "
            "over symbols, joint date-block bootstrap 95 % intervals",
            "",
            baseline_table(report),
            "",
            "**Every band on the test windows** — coverage with its joint-bootstrap interval",
            "",
            band_pooled_table(report),
            "",
            f"**Coverage tests of the served band ({_name(winner)})** — on non-overlapping "
            "origins; Holm over the symbol × horizon cells of each test",
            "",
            coverage_tests_table(report, winner),
            "",
        ]
        shown = [(winner, BASELINE), (winner, "residual")]
        if winner != "gjr":
            shown.append(("gjr", "residual"))
        for name, reference in dict.fromkeys(p for p in shown if p[0] != p[1]):
            if f"{name}_vs_{reference}" not in bands["comparisons"]:
                continue
            parts += [
                f"**{_name(name)} band over {_name(reference)}**, interval-score skill",
                "",
                band_skill_table(report, name, reference),
                "",
            ]
        parts += ["![Bands over time](evaluation/bands.png)", ""]
    parts += [
        "**Coverage of the 80 % interval at day h, test windows** — percent, 95 % interval",
        "",
        coverage_table(report),
        "",
        "**`unsure` on the test windows** — error = |log(actual / forecast)| at day h",
        "",
        unsure_table(report),
        "",
        "**Which rule earns the flag** — each tuned to flag 20 % of the tune windows; "
        "the rule with the highest tune-window ratio is served: "
        + ((report.get("unsure_rule") or {}).get("why") or "disagreement (no comparison)"),
        "",
        unsure_rules_table(report),
        "",
        "Disagreement rule within each symbol (flagged / error ratio):",
        "",
        unsure_by_symbol(report),
        "",
        "![Reliability diagram](evaluation/reliability.png)",
        "",
        "![Coverage per symbol](evaluation/coverage.png)",
    ]
    return "\n".join(parts)


def tables(report: dict[str, Any]) -> str:
    """Every table, including the per-model details (docs/evaluation/tables.md)."""
    parts = ["# Nested evaluation: all tables", "", headline(report).replace("evaluation/", "")]
    for horizon in report["horizons"]:
        parts += ["", f"## Details, horizon {horizon}", "", detail_table(report, str(horizon))]
    if (report.get("bands") or {}).get("cells"):
        parts += ["", "## Every band, symbol and horizon", "", band_cells_table(report)]
        bands = report["bands"]
        for key in bands["comparisons"]:
            if key.endswith("_pooled"):
                continue
            name, reference = key.split("_vs_")
            parts += ["", f"## {_name(name)} over {_name(reference)}", "",
                      band_skill_table(report, name, reference)]  # fmt: skip
        if BASELINE in bands.get("coverage_tests", {}) and bands["winner"] != BASELINE:
            parts += ["", f"## Coverage tests of {_name(BASELINE)}", "",
                      coverage_tests_table(report, BASELINE)]  # fmt: skip
    return "\n".join(parts) + "\n"


def summary(report: dict[str, Any]) -> str:
    """A few lines for the terminal."""
    lines = []
    for horizon, table in report["coverage"].items():
        pooled = table["pooled"]
        tuned = report["unsure"][horizon]["tuned"]
        ratio = tuned["error_ratio"]
        lines.append(
            f"h={horizon}: coverage {pooled['legacy']:.3f} -> {pooled['calibrated']:.3f} "
            f"(stretch {table['scale']:.3f}); unsure flags {tuned['flag_rate']:.0%}, "
            f"error ratio {'–' if ratio is None else f'{ratio:.2f}'}"
        )
    bands = report.get("bands") or {}
    for h, pooled in bands.get("pooled", {}).items():
        scores = ", ".join(f"{n} {e['interval_score']:.2f}" for n, e in pooled.items())
        lines.append(f"h={h}: interval score {scores}")
    lines += [line.removeprefix("* ").replace("**", "") for line in band_summary(report)]
    return "\n".join(lines)


def update_page(page: Path, report: dict[str, Any]) -> None:
    """Replace the generated block of the documentation page (the prose stays as written)."""
    text = page.read_text(encoding="utf-8") if page.exists() else f"{BEGIN}\n{END}\n"
    block = f"{BEGIN}\n{headline(report)}\n{END}"
    pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise ValueError(f"{page} has no {BEGIN} … {END} block to fill")
    page.write_text(pattern.sub(lambda _: block, text), encoding="utf-8")
