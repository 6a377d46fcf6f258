"""Open-loop load: predictions arrive at a fixed rate, whatever the server does.

Closed-loop users (Locust's) wait for an answer before they send again, so an overloaded
server quietly slows its own load down and its latency looks better than it is. Here each
arrival is scheduled in advance (every 1/rate s, or Poisson) and runs in its own thread;
its latency is measured from its *scheduled* time, so a late client never hides a slow
server (no coordinated omission). Arrivals still unfinished when the drain time is up are
counted as errors with their latency so far.

    python -m loadtests.openloop --host http://127.0.0.1:8000 --rate 2 --duration 30 --cold
"""

from __future__ import annotations

import argparse
import json
import random
import threading
import time
from pathlib import Path
from typing import Any

import requests

from loadtests import latencies
from loadtests.rawlog import RawLog, Row
from loadtests.workload import Workload, parse_mix, requests_call, submit_and_wait


def arrival_offsets(
    rate: float, duration_s: float, poisson: bool, rng: random.Random
) -> list[float]:
    """Seconds after the start at which each request is sent."""
    if rate <= 0 or duration_s <= 0:
        raise ValueError("rate and duration must be positive")
    if not poisson:
        return [i / rate for i in range(max(1, round(rate * duration_s)))]
    offsets, t = [], rng.expovariate(rate)
    while t < duration_s:
        offsets.append(t)
        t += rng.expovariate(rate)
    return offsets


def step_offsets(steps: list[tuple[float, float]]) -> list[float]:
    """Evenly spaced arrivals for consecutive (rate per second, seconds) steps."""
    offsets, start = [], 0.0
    for rate, seconds in steps:
        if rate <= 0 or seconds <= 0:
            raise ValueError("every step needs a positive rate and duration")
        offsets += [start + i / rate for i in range(max(1, round(rate * seconds)))]
        start += seconds
    return offsets


class OpenLoop:
    def __init__(
        self,
        base_url: str,
        workload: Workload,
        raw: RawLog,
        *,
        max_in_flight: int = 256,
        http_timeout_s: float = 40.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.workload = workload
        self.raw = raw
        self.max_in_flight = max_in_flight
        self.http_timeout_s = http_timeout_s
        self._local = threading.local()
        self._lock = threading.Lock()
        self._in_flight: dict[int, float] = {}  # arrival index -> scheduled epoch time
        self._closed = False
        self.peak_in_flight = 0

    def _call(
        self, method: str, path: str, body: dict[str, Any] | None, name: str
    ) -> tuple[int, dict[str, Any]]:
        session = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = requests.Session()
        return requests_call(session, self.base_url, self.http_timeout_s)(method, path, body, name)

    def _record(self, index: int, row: Row) -> None:
        with self._lock:
            if self._closed or index not in self._in_flight:
                return
            del self._in_flight[index]
            self.raw.write(row)

    def _arrive(self, index: int, scheduled: float, symbol: str) -> None:
        name = self.workload.strategy or "default"
        try:
            outcome = submit_and_wait(
                self._call, self.workload.body(symbol), self.workload.max_wait_s
            )
            ok, status, pid, hit, error = (
                outcome.ok,
                outcome.status,
                outcome.prediction_id,
                outcome.cache_hit,
                outcome.error,
            )
        except requests.RequestException as exc:
            ok, status, pid, hit, error = False, "connection error", "", False, str(exc)
        latency_ms = (time.time() - scheduled) * 1000
        self._record(
            index, Row("prediction", name, scheduled, latency_ms, ok, status, pid, hit, error)
        )

    def run(
        self,
        rate: float,
        duration_s: float,
        drain_s: float,
        *,
        poisson: bool = False,
        seed: int | None = 0,
    ) -> dict[str, Any]:
        """Send every arrival on schedule, then wait up to `drain_s` for the last ones."""
        rng = random.Random(seed)
        offsets = arrival_offsets(rate, duration_s, poisson, rng)
        info = self.run_schedule(offsets, drain_s, rng)
        return {**info, "offered_rate": rate, "duration_s": duration_s}

    def run_schedule(
        self, offsets: list[float], drain_s: float, rng: random.Random, start: float | None = None
    ) -> dict[str, Any]:
        """Send an arrival at each offset (seconds after `start`), then drain as `run` does."""
        start = time.time() if start is None else start
        dropped = 0
        for index, offset in enumerate(offsets):
            scheduled = start + offset
            delay = scheduled - time.time()
            if delay > 0:
                time.sleep(delay)
            with self._lock:
                if len(self._in_flight) >= self.max_in_flight:
                    dropped += 1
                    self.raw.write(
                        Row(
                            "prediction",
                            self.workload.strategy or "default",
                            scheduled,
                            0.0,
                            False,
                            "dropped",
                            error="client at max in-flight",
                        )
                    )
                    continue
                self._in_flight[index] = scheduled
                self.peak_in_flight = max(self.peak_in_flight, len(self._in_flight))
            symbol = self.workload.pick(rng)
            threading.Thread(
                target=self._arrive, args=(index, scheduled, symbol), daemon=True
            ).start()
        deadline = time.time() + drain_s
        while time.time() < deadline:
            with self._lock:
                if not self._in_flight:
                    break
            time.sleep(0.05)
        with self._lock:
            self._closed = True
            now = time.time()
            for scheduled in self._in_flight.values():
                self.raw.write(
                    Row(
                        "prediction",
                        self.workload.strategy or "default",
                        scheduled,
                        (now - scheduled) * 1000,
                        False,
                        "unfinished",
                        error=f"not answered {drain_s:.0f} s after the last arrival",
                    )
                )
            unfinished = len(self._in_flight)
        return {
            "arrivals": len(offsets),
            "dropped": dropped,
            "unfinished": unfinished,
            "peak_in_flight": self.peak_in_flight,
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="http://127.0.0.1:8000")
    parser.add_argument("--rate", type=float, required=True, help="predictions per second")
    parser.add_argument("--duration", type=float, default=30, help="seconds of arrivals")
    parser.add_argument("--drain", type=float, default=60, help="seconds to wait afterwards")
    parser.add_argument("--poisson", action="store_true", help="exponential inter-arrivals")
    parser.add_argument("--symbols", default="AAPL,MSFT,IBM,GOOG")
    parser.add_argument("--strategy", default="")
    parser.add_argument("--horizon", type=int, default=5)
    parser.add_argument("--cold", action="store_true", help="skip the cache and warm start")
    parser.add_argument("--raw-csv", default="loadtests/reports/openloop-raw.csv")
    args = parser.parse_args(argv)
    workload = Workload(parse_mix(args.symbols), args.horizon, args.strategy or None, args.cold)
    raw = RawLog(args.raw_csv)
    try:
        info = OpenLoop(args.host, workload, raw).run(
            args.rate, args.duration, args.drain, poisson=args.poisson
        )
    finally:
        raw.close()
    from loadtests.rawlog import read

    rows = [r for r in read(Path(args.raw_csv)) if r.kind == "prediction"]
    ok = [r.latency_ms for r in rows if r.ok]
    summary = latencies.summarize(ok, len(rows) - len(ok), args.duration)
    print(json.dumps({**info, **summary}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
