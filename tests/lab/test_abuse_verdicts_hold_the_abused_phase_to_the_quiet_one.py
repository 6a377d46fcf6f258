"""`make -C lab abuse`'s table: each goal met or not, the abused phase held to the quiet one."""

from __future__ import annotations

import copy
from typing import Any

from lab.abuse_report import http_5xx, report, verdict_rows

MIB = 1024 * 1024


def client(p95: float, answered: int = 72, expected: int = 72, **extra: Any) -> dict[str, Any]:
    statuses = {"done": answered, **extra.pop("statuses", {})}
    return {"expected": expected, "answered": answered, "not_done": expected - answered,
            "p50_ms": p95 / 3, "p95_ms": p95, "statuses": statuses, "watched_hits": "20 / 30",
            **extra}  # fmt: skip


def phase(p95: float = 1000.0) -> dict[str, Any]:
    return {
        "window_s": 240.0,
        "rest": client(p95),
        "queue": client(p95),
        "watchlist": client(p95, answered=6, expected=6),
        "redis": {"main": {"maxmemory": 256 * MIB, "policy": "noeviction", "peak_used": 20 * MIB}},
        "logs": {"oom_lines": 0},
        "rows": {"per_hour": {"predictions_predictionrequest": 1200.0, "other": 300.0}},
    }


def verdicts(quiet: dict[str, Any], abused: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """Each figure's verdicts (quiet, abused), by the figure's name."""
    return {row[0]: (row[4], row[5]) for row in verdict_rows(quiet, abused)}


def test_an_abused_phase_like_the_quiet_one_meets_every_goal():
    found = verdicts(phase(), phase(p95=1900.0))
    assert found["REST client (token): p95 abused / quiet"][1] == "met"
    assert found["stream client: answers arrived"] == ("met", "met")
    assert found["main Redis: used_memory peak"] == ("met", "met")
    assert "**not met**" not in {v for pair in found.values() for v in pair}


def test_a_p95_over_twice_the_quiet_one_is_not_met():
    found = verdicts(phase(), phase(p95=2100.0))
    assert found["REST client (token): p95 abused / quiet"][1] == "**not met**"
    assert found["stream client: p95 abused / quiet"][1] == "**not met**"


def test_a_fast_p95_over_only_some_answers_is_no_pass():
    abused = phase(p95=50.0)
    abused["rest"] = client(50.0, answered=1, statuses={"http 503": 71}, admission_refusals=71)
    found = verdicts(phase(), abused)
    assert found["REST client (token): p95 abused / quiet"][1] == "**not met**"
    assert found["REST client (token): answers arrived"][1] == "**not met**"
    assert found["REST client (token): 5xx answers"][1] == "**not met**"


def test_a_redis_without_maxmemory_is_not_within_a_bound():
    abused = phase()
    abused["redis"]["main"] = {"maxmemory": 0, "policy": "noeviction", "peak_used": 900 * MIB}
    quiet = copy.deepcopy(abused)
    quiet["redis"]["main"]["peak_used"] = 10 * MIB
    assert verdicts(quiet, abused)["main Redis: used_memory peak"] == ("**not met**",) * 2


def test_a_peak_over_maxmemory_is_not_met_and_oom_lines_count_against_the_service():
    abused = phase()
    abused["redis"]["main"]["peak_used"] = 300 * MIB
    abused["logs"]["oom_lines"] = 3
    found = verdicts(phase(), abused)
    assert found["main Redis: used_memory peak"] == ("met", "**not met**")
    assert found["service log lines naming Redis's memory limit (OOM, maxmemory)"][1] == (
        "**not met**"
    )


def test_no_watchlist_refresh_in_the_quiet_phase_gives_no_ratio_to_judge():
    quiet = phase()
    quiet["watchlist"] = client(0.0, answered=0, expected=0)
    found = verdicts(quiet, phase())
    assert found["watchlist: refreshes abused / quiet"][1].startswith("–")
    assert found["watchlist: refreshes finished / started in the window"][0].startswith("–")


def test_5xx_are_counted_however_the_outcome_names_them():
    assert http_5xx({"http 503": 2, "503": 1, "http 429": 4, "done": 9, "500": 1}) == 4


def test_the_report_states_the_rows_per_hour_of_every_table():
    results = {
        "date": "2026-11-26 05:00", "command": "python -m lab.abuse", "root": "/x",
        "commit": "526eb8b", "settings": {"NUM_PROXIES": "1"},
        "machine": {"cores": 2, "cpu": "cpu", "load_average": [1, 1, 1]},
        "machine_after": {"load_average": [2, 2, 2]},
        "phases": {"quiet": phase(), "abused": phase(p95=1500.0)},
    }  # fmt: skip
    text = report(results)
    assert "| database: PredictionRequest rows per hour | 1,200 | 1,200 | stated |" in text
    assert "| other | 300 | 300 |" in text


def test_the_identified_client_refused_at_admission_or_too_few_answers_is_not_met():
    abused = phase()
    abused["rest"] = client(1000.0, answered=70, statuses={"http 503": 2}, admission_refusals=2)
    abused["queue"] = client(1000.0, answered=30, expected=30)
    found = verdicts(phase(), abused)
    assert found["REST client (token): refused at admission (POST 429/503, asked again)"] == (
        "met", "**not met**",
    )  # fmt: skip
    assert found["stream client: answers, enough for a p95"] == ("met", "**not met**")
