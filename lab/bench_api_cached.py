"""`make -C lab bench-api`'s cached answers: the service against a reference in the same minutes.

`wrk` (32 connections) posts the same question to the service and to a minimal Django
project serving one JSON view of the same bytes under the same gunicorn command line
(`lab/bare_django.py`), alternating rounds: five by default, the median of the rounds'
ratios with a distribution-free interval and the machine's idle CPU in each round (one
pair of readings swung from 0.54× to 1.20× between runs). Then an open-loop run at fixed
rates (`loadtests.engine`, exact percentiles) on each. With `--replay`, the open loop runs again
on a stack under `make run`'s replay clock (a new market day every
REPLAY_SECONDS_PER_DAY, which makes every cached answer stale, and make run's watchlist),
so the p99 says what a new day costs the askers (`replay_clock`).
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import requests

from devstack.supervisor import Supervisor
from lab.cpu import machine_busy_seconds
from lab.harness import Stack
from launch import process_catalog
from loadtests import engine
from loadtests.deployment import PREDICTIONS, QUESTION, ROOT, start_web, wait_until


def measure(
    stack: Stack, sup: Supervisor, token: str, workdir: Path, rounds: int, seconds: int,
    rates: list[float], open_seconds: float,
) -> dict[str, Any]:  # fmt: skip
    """The cached path with and without a token, and at fixed rates, against the reference."""
    body = requests.post(f"{stack.base}{PREDICTIONS}", json=QUESTION).content
    (workdir / "answer.json").write_bytes(body)
    bare_url = start_reference(sup, workdir / "answer.json", workdir / "logs")
    return {
        "answer_bytes": len(body),
        "cached": cached_rounds(stack, bare_url, rounds, seconds, workdir, token),
        "open_loop": [  # each rate: the service, then the reference at the same rate
            fixed_rate(f"{stack.base}{PREDICTIONS}", rate, open_seconds)
            | {"reference": fixed_rate(bare_url, rate, open_seconds)}
            for rate in rates
        ],
    }


WRK_LUA = """wrk.method = "POST"
wrk.body = '{body}'
wrk.headers["Content-Type"] = "application/json"
{auth}"""


def parse_wrk(text: str) -> dict[str, Any]:
    """Requests/sec, latency percentiles (ms) and errors from `wrk --latency` output."""

    def ms(value: str) -> float:
        number, unit = re.fullmatch(r"([\d.]+)(us|ms|s)", value).groups()  # type: ignore[union-attr]
        return float(number) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]

    rps = re.search(r"Requests/sec:\s+([\d.]+)", text)
    pct = dict(re.findall(r"^\s+(50|75|90|99)%\s+(\S+)", text, re.M))
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    sockets = re.search(
        r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text
    )
    return {
        "rps": float(rps.group(1)) if rps else 0.0,
        "p50_ms": ms(pct["50"]) if "50" in pct else None,
        "p99_ms": ms(pct["99"]) if "99" in pct else None,
        "non_2xx": int(non_2xx.group(1)) if non_2xx else 0,
        "socket_errors": sum(int(n) for n in sockets.groups()) if sockets else 0,
    }


def wrk(url: str, seconds: int, workdir: Path, token: str | None = None) -> dict[str, Any]:
    script = workdir / ("post-token.lua" if token else "post.lua")
    auth = f'wrk.headers["Authorization"] = "Token {token}"' if token else ""
    script.write_text(WRK_LUA.format(body=json.dumps(QUESTION), auth=auth))
    argv = ["wrk", "-t2", "-c32", f"-d{seconds}s", "--latency", "-s", str(script), url]
    return parse_wrk(subprocess.run(argv, capture_output=True, text=True, check=True).stdout)


def cached_rounds(
    stack: Stack, bare_url: str, rounds: int, seconds: int, workdir: Path, token: str
) -> dict[str, Any]:
    """Service and reference alternately, so machine noise hits both alike; each pair of
    rounds gives one ratio, with the machine's idle CPU in each round. The token's rounds
    alternate too: back to back, wrk's connections all landed on one gunicorn process."""
    service, reference, with_token, token_reference = [], [], [], []
    for _ in range(rounds):
        service.append(idle_during(lambda: wrk(f"{stack.base}{PREDICTIONS}", seconds, workdir)))
        reference.append(idle_during(lambda: wrk(bare_url, seconds, workdir)))
    for _ in range(max(1, rounds // 2)):
        with_token.append(wrk(f"{stack.base}{PREDICTIONS}", seconds, workdir, token))
        token_reference.append(wrk(bare_url, seconds, workdir))

    def median_of(runs: list[dict[str, Any]], key: str) -> float | None:
        values = [r[key] for r in runs if r[key] is not None]
        return statistics.median(values) if values else None

    summary: dict[str, Any] = {
        name: {key: median_of(runs, key) for key in ("rps", "p50_ms", "p99_ms")}
        | {"errors": sum(r["non_2xx"] + r["socket_errors"] for r in runs), "rounds": runs}
        for name, runs in (("service", service), ("reference", reference), ("token", with_token))
    }
    ratios = [s["rps"] / r["rps"] for s, r in zip(service, reference, strict=True) if r["rps"]]
    summary |= ratio_with_interval(ratios)
    summary["token_reference_rps"] = statistics.median(r["rps"] for r in token_reference)
    summary["token_ratio"] = statistics.median(
        t["rps"] / r["rps"] for t, r in zip(with_token, token_reference, strict=True) if r["rps"]
    )
    return summary


def idle_during(measure: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """`measure()`'s result with the share of the machine's CPU left idle while it ran."""
    cores = os.cpu_count() or 1
    busy, started = machine_busy_seconds(), time.monotonic()
    result = measure()
    elapsed = time.monotonic() - started
    used = (machine_busy_seconds() - busy) / (elapsed * cores)
    return result | {"idle_cpu": max(0.0, 1.0 - used)}


def ratio_with_interval(ratios: list[float]) -> dict[str, Any]:
    """The median of the rounds' ratios and a distribution-free interval for it: with n
    rounds, [lowest, highest] holds the true median with probability 1 - 2 * 0.5**n
    (94 % for five rounds), whatever the noise's shape; one round gives no interval."""
    ordered = sorted(ratios)
    n = len(ordered)
    return {
        "ratio": statistics.median(ordered) if ordered else 0.0,
        "ratios": ratios,
        "interval": (ordered[0], ordered[-1]) if n > 1 else None,
        "confidence": 1.0 - 2 * 0.5**n if n > 1 else None,
    }


def fixed_rate(url: str, rate: float, seconds: float) -> dict[str, Any]:
    """The question POSTed `rate` times a second for `seconds`: exact percentiles."""
    base, _, path = url.partition(PREDICTIONS)
    job = engine.one_request("POST", PREDICTIONS + path, json.dumps(QUESTION).encode())
    arrivals = [engine.Arrival(at, "http", "question", job) for at in engine.steady(rate, seconds)]
    rows: list[Any] = []
    info = engine.run(base, arrivals, rows.append, drain_s=10)
    return {"target_rps": rate, **engine.summary(rows, info["elapsed_s"])}


def start_reference(sup: Supervisor, body_file: Path, logs: Path) -> str:
    """A minimal Django project serving `body_file` as one JSON view, under the same
    gunicorn command line (lab/bare_django.py)."""
    env = {**os.environ, "BARE_BODY_FILE": str(body_file)}
    base, _ = start_web(
        sup, env, logs / "reference.log", process_catalog.web_workers(), 8, name="reference",
        app="lab.bare_django:application", probe=PREDICTIONS, method="POST", json=QUESTION,
    )  # fmt: skip
    return f"{base}{PREDICTIONS}"


# `make run`'s replay: a market day every 10 s, and its watchlist (config/settings.py's
# PRECOMPUTE_SYMBOLS default), which Stack otherwise empties.
REPLAY = {
    "MARKET_CLOCK": "replay",
    "REPLAY_SECONDS_PER_DAY": "10",
    "PRECOMPUTE_SYMBOLS": "AAPL,MSFT,GOOG",
}


def replay_clock(
    sup: Supervisor, workdir: Path, rate: float, seconds: float, root: Path = ROOT
) -> dict[str, Any]:
    """The cached question at a fixed rate on a stack of its own under the replay clock,
    once it has a stored answer: each new day in the run drops every answer, and the
    askers wait for (or pay for) the recomputation; the statuses count the 202s."""
    logs = workdir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    stack = Stack(sup, workdir / "var", logs, extra=REPLAY, root=root)
    url = f"{stack.base}{PREDICTIONS}"
    answered = lambda: requests.post(url, json=QUESTION, timeout=30).status_code == 200  # noqa: E731
    try:
        stack.start()
        wait_until(answered, time.monotonic() + 180, "a stored answer under the replay clock", sup)
        summary = fixed_rate(url, rate, seconds)
    finally:
        stack.stop()
    return {
        **summary,
        "seconds": seconds,
        "seconds_per_day": float(REPLAY["REPLAY_SECONDS_PER_DAY"]),
    }
