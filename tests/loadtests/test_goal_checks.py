"""The report checks the issue's targets against the measured configurations."""

from __future__ import annotations

from loadtests.goal_checks import evaluate


def config(
    strategy,
    workers,
    p50,
    *,
    profile="off",
    by_symbol=None,
    slowest=None,
    model_ms=None,
    mase=None,
    escalated=None,
):
    """A measured configuration; `by_symbol` is the client's p50 per symbol."""
    by_symbol = by_symbol or {}
    return {
        "label": f"{strategy} {workers}w",
        "strategy": strategy,
        "workers": workers,
        "profile": profile,
        "n_tasks": 4,
        "client": {"p50_ms": p50, "p50_by_symbol": by_symbol},
        "server": {
            "slowest_stage_p50_ms": max((slowest or {"-": 0}).values()),
            "by_symbol": {s: {"slowest_stage_p50_ms": v} for s, v in (slowest or {}).items()},
            "model_ms_mean": model_ms,
            "ensemble_mase_by_symbol": mase,
            "escalation_rate": escalated,
        },
    }


def test_it_compares_the_chord_with_the_slowest_stage_alone_symbol_by_symbol():
    alone = config("centralized", 1, 4000, slowest={"AAPL": 3000, "GOOG": 2000, "IBM": 2500})
    chord = config("chord", 4, 3000, by_symbol={"AAPL": 3300, "GOOG": 2400, "MSFT": 9999})
    (line,) = evaluate([alone, chord])
    # AAPL 1.10, GOOG 1.20: the median of the ratios over the symbols both measured is 1.15.
    assert line.startswith("chord cold p50 without emulation (chord 4w) = 1.15 × the slowest")
    assert "over AAPL, GOOG" in line and line.endswith("target ≤ 1.15: **met**")


def test_it_compares_chord_and_centralized_under_emulated_latency():
    lines = evaluate(
        [
            config("centralized", 4, 5000, profile="300,30", by_symbol={"IBM": 5000}),
            config("chord", 4, 3500, profile="300,30", by_symbol={"IBM": 3500}),
            config("chord", 2, 3000, profile="300,30", by_symbol={"IBM": 3000}),
        ]
    )
    assert len(lines) == 1  # 2 workers are fewer than the 4 tasks: not this target
    assert "chord p50 = 0.70 × centralized" in lines[0] and "**not met**" in lines[0]


def test_it_weighs_the_cascade_savings_against_its_error_on_common_symbols():
    chord = config("chord", 2, 3000, model_ms=3000, mase={"AAPL": 1.05, "IBM": 0.97})
    cascade = config("cascade", 2, 900, model_ms=600, mase={"IBM": 0.972}, escalated=0.25)
    (line,) = evaluate([chord, cascade])
    assert "80% less" in line and "25% of requests" in line
    assert "MASE 0.972 vs 0.970 on the same symbols (no worse = within 0.5%): **met**" in line


def test_a_cascade_that_loses_accuracy_does_not_meet_the_target():
    chord = config("chord", 2, 3000, model_ms=3000, mase={"IBM": 0.97})
    cascade = config("cascade", 2, 900, model_ms=600, mase={"IBM": 0.99}, escalated=0.0)
    (line,) = evaluate([chord, cascade])
    assert line.endswith("**not met**")
