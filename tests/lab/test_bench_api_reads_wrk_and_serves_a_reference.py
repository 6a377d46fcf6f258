"""`make -C lab bench-api`'s pieces: it reads wrk's report, and its reference view serves
the bytes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from lab import bench_api
from lab.bench_api_cached import parse_wrk, ratio_with_interval
from lab.bench_api_warm import stage_breakdown
from tests.support.processes import ROOT

WRK_OUTPUT = """Running 10s test @ http://127.0.0.1:8100/api/v1/predictions/
  2 threads and 32 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency    21.73ms   15.04ms 172.85ms   71.42%
    Req/Sec   736.77    150.52     1.22k    72.50%
  Latency Distribution
     50%   20.22ms
     75%   24.89ms
     90%   35.18ms
     99%    1.01s
  14965 requests in 10.04s, 17.73MB read
  Socket errors: connect 0, read 2, write 0, timeout 1
  Non-2xx or 3xx responses: 4
Requests/sec:   1465.24
Transfer/sec:      1.77MB
"""


def test_it_reads_throughput_percentiles_and_errors_from_wrk():
    parsed = parse_wrk(WRK_OUTPUT)
    assert parsed == {
        "rps": 1465.24,
        "p50_ms": 20.22,
        "p99_ms": 1010.0,
        "non_2xx": 4,
        "socket_errors": 3,
    }


def test_the_reference_view_answers_with_the_given_bytes(tmp_path):
    body = json.dumps({"x": "y" * 5000}).encode()
    (tmp_path / "answer.json").write_bytes(body)
    script = (
        "import io, lab.bare_django as b\n"
        "env = {'REQUEST_METHOD': 'POST', 'PATH_INFO': '/api/v1/predictions/', "
        "'SERVER_NAME': 'x', 'SERVER_PORT': '80', 'wsgi.input': io.BytesIO(), "
        "'wsgi.url_scheme': 'http'}\n"
        "seen = {}\n"
        "out = b''.join(b.application(env, lambda s, h: seen.update(status=s, headers=h)))\n"
        "print(seen['status'], len(out), dict(seen['headers'])['Content-Length'])\n"
    )
    env = {**os.environ, "BARE_BODY_FILE": str(tmp_path / "answer.json")}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["200", "OK", str(len(body)), str(len(body))]


def test_the_stage_breakdown_splits_waiting_from_running():
    prediction = {
        "created_at": "2026-01-01T00:00:00Z",
        "stages": [
            {
                "stage": "prices",
                "started_at": 1767225600.010,
                "finished_at": 1767225600.020,
                "duration_ms": 10.0,
            },
            {
                "stage": "model:naive",
                "started_at": 1767225600.050,
                "finished_at": 1767225600.055,
                "duration_ms": 5.0,
            },
        ],
    }
    rows = stage_breakdown([prediction])
    assert round(rows["prices"]["wait_ms"]) == 10 and rows["prices"]["duration_ms"] == 10.0
    assert round(rows["model:naive"]["wait_ms"]) == 30


def open_loop_row(rate: float, p99: float) -> dict[str, object]:
    row: dict[str, object] = {
        "target_rps": rate,
        "achieved_rps": rate,
        "errors": 0,
        "p50_ms": 1.0,
        "p99_ms": p99,
        "max_ms": p99 * 2,
    }
    return row | {"reference": dict(row)}


def test_the_report_states_each_goal_with_both_sides_of_the_open_loop():
    rounds = [{"rps": rps, "idle_cpu": 0.25} for rps in (2900.0, 3000.0, 3100.0)]
    side = {"rps": 3000.0, "p50_ms": 5.0, "p99_ms": 20.0, "rounds": rounds}
    machine = {"cores": 2, "cpu": "x", "arch": "x86_64", "python": "3.11", "load_average": "0 0 0"}
    results = {
        "date": "2026-11-23 04:00",
        "command": "python -m lab.bench_api",
        "machine_before": machine,
        "machine_after": machine,
        "cached": {
            "service": side | {"rps": 2400.0},
            "reference": side,
            "token": side | {"rps": 1500.0},
            **ratio_with_interval([0.8, 1.1, 1.3]),
            "token_ratio": 0.5,
            "token_reference_rps": 3000.0,
        },
        "open_loop": [open_loop_row(250, 4.0), open_loop_row(1000, 25.0)],
        "warm": {
            "latencies_ms": [100.0, 120.0],
            "p50_ms": 110.0,
            "p95_ms": 120.0,
            "stages": {"prices": {"wait_ms": 3.0, "duration_ms": 2.0}},
        },
        "restart": {
            "ready_s": 20,
            "first_ms": 130.0,
            "next_ms": [100.0],
            "next_p50_ms": 100.0,
            "ratio": 1.3,
        },
        "cold_ms": 3000.0,
        "overhead": {
            "our chord": {"p50_ms": 60.0},
            "bare chord": {"p50_ms": 58.0},
            "our_chord_vs_bare_p50": 60 / 58,
        },
    }
    results["replay"] = open_loop_row(250, 40.0) | {
        "seconds": 40.0,
        "seconds_per_day": 10.0,
        "statuses": {"200": 9990, "202": 10},
    }
    text = bench_api.report(results)
    # the median ratio with its interval over three rounds (1 - 2 * 0.5**3 = 75 %)
    assert "| 1.10 [0.80, 1.30] (75%) | ≥ 1.0 at the interval's lower end | **not met** |" in text
    assert "| 1 | 2,900 | 25% | 2,900 | 25% | 0.80 |" in text  # each round, idle CPU beside
    assert (
        "| cached POST under the replay clock (a new day every 10 s), open loop at 250 req/s "
        "for 40 s: p50 / p99 / max ms, statuses | 1.0 / 40.0 / 80.0, {'200': 9990, '202': 10} |"
        in text
    )
    assert (
        "1.0 / 25.0 / 50.0, 0 | 1.0 / 25.0 / 50.0, 0 | | p99 ≤ 10 ms, 0 errors | **not met** |"
        in text
    )
    assert "| p50 ≤ 150 | met |" in text
    assert "| ≤ 1.10 | **not met** |" in text  # the restart, 1.3×
    assert "| ≤ 1.2 | met |" in text  # the no-op chord


def test_five_rounds_give_the_median_ratio_and_a_94_percent_interval():
    summary = ratio_with_interval([1.2, 0.9, 1.05, 1.3, 1.0])

    assert summary["ratio"] == 1.05
    assert summary["interval"] == (0.9, 1.3)
    assert summary["confidence"] == 1 - 2 / 32  # the median lies outside [min, max] only
    # when every round falls on one side of it


def test_one_round_gives_a_ratio_and_no_interval():
    summary = ratio_with_interval([1.1])

    assert summary["ratio"] == 1.1 and summary["interval"] is None
    assert "(one round: no interval)" in bench_api.cached_ratio(summary)
