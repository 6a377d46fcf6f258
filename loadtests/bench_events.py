"""`make bench-events`: what the live-event path costs per task, and how many events per
second reach a connected dashboard without it falling behind.

    python -m loadtests.bench_events [--rates 500,1000,2000,4000] [--seconds 10]

Runs on its own private Redis and a throw-away SQLite database, with the real parts:
the publisher functions the workers call, the relay (`manage.py relay_events`), uvicorn
serving the ASGI app, and the dashboard page in headless Chromium (a Python websocket
client when Chromium is missing). Prints the figures; nothing is asserted.

1. Cost per task: time `progress.record_stage` (what every stage does: RPUSH + EXPIRE +
   PUBLISH + metric counters, one round trip) and `progress.publish_request`, with the
   relay subscribed.
2. Throughput: a publisher process emits whole request lifecycles (submitted, six
   stages, done = 8 events) at a target rate; the dashboard counts the events its batches
   cover and how far behind the newest event it is. "Keeps up" = every event delivered
   and the lag stays within a few ticks.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
STAGES = (
    ("prices", "io"),
    ("model:naive", "cpu"),
    ("model:ridge", "cpu"),
    ("model:lstm", "cpu"),
    ("sentiment", "io"),
    ("combine", "cpu"),
)
EVENTS_PER_REQUEST = 2 + len(STAGES)
PUBLISHER_RATE = 1500  # events/s one publisher process paces comfortably


def _setup_environment(workdir: Path) -> Any:
    from devstack.redis import EmbeddedRedis

    redis = EmbeddedRedis(workdir=str(workdir / "redis")).start()
    os.environ.update(
        {
            "REDIS_URL": redis.url,
            "VAR_DIR": str(workdir),
            "DATABASE_URL": f"sqlite:///{workdir / 'bench.sqlite3'}",
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "WEBSOCKET_URL": "/",  # the page and the socket share uvicorn's origin here
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "LOG_LEVEL": "WARNING",
        }
    )
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return redis


def _staff_session() -> str:
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.auth.models import User
    from django.contrib.sessions.backends.db import SessionStore

    user = User.objects.create_user("bench", password=uuid.uuid4().hex, is_staff=True)
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.create()
    return str(session.session_key)


def _fake_request() -> SimpleNamespace:
    return SimpleNamespace(
        id=uuid.uuid4(),
        symbol="AAPL",
        horizon=5,
        strategy="chord",
        cache_hit=False,
        created_at=datetime.now(UTC),
    )


def _stage_record(stage: str, queue: str) -> dict[str, Any]:
    now = time.time()
    return {
        "stage": stage,
        "started_at": round(now - 0.01, 4),
        "finished_at": round(now, 4),
        "duration_ms": 10.0,
        "worker": f"{queue}@bench",
        "queue": queue,
        "pid": os.getpid(),
        "outcome": "ok",
    }


def _lifecycle() -> Any:
    """Endless events of whole requests, through the publisher functions the service uses."""
    from predictions import progress

    while True:
        request = _fake_request()
        yield lambda r=request: progress.publish_request("submitted", r, use_cache=True)
        for stage, queue in STAGES:
            yield lambda r=request, s=stage, q=queue: progress.record_stage(
                str(r.id), _stage_record(s, q)
            )
        yield lambda r=request: progress.publish_request("done", r)


def _publish(rate: float, seconds: float, out: Any) -> None:
    """Child process: publish `rate` events/s for `seconds`, paced in 10 ms slots."""
    events = _lifecycle()
    slot = 0.01
    per_slot = rate * slot
    owed = 0.0
    sent = 0
    start = time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        owed += per_slot
        while owed >= 1:
            next(events)()
            sent += 1
            owed -= 1
        pause = (int(elapsed / slot) + 1) * slot - (time.perf_counter() - start)
        if pause > 0:
            time.sleep(pause)
    out.send((sent, time.perf_counter() - start))


def measure_cost(calls: int) -> dict[str, dict[str, float]]:
    """Microseconds per call of what a task adds for the live path."""
    from predictions import progress

    results = {}
    request = _fake_request()
    cases = {
        "record_stage (every stage)": lambda: progress.record_stage(
            str(request.id), _stage_record("model:ridge", "cpu")
        ),
        "publish_request (per request)": lambda: progress.publish_request("done", request),
    }
    for name, call in cases.items():
        for _ in range(200):  # warm the connection and the interpreter
            call()
        samples = []
        for _ in range(calls):
            t0 = time.perf_counter()
            call()
            samples.append((time.perf_counter() - t0) * 1e6)
        samples.sort()
        results[name] = {
            "mean_us": statistics.fmean(samples),
            "p50_us": samples[len(samples) // 2],
            "p99_us": samples[int(len(samples) * 0.99) - 1],
        }
    return results


def measure_window_memory(checkpoints: tuple[int, ...] = (20_000, 50_000, 100_000)) -> list:
    """Python memory held by the relay's window as requests stream through it: it must
    level off (at most DASHBOARD_WINDOW requests and 50 000 latency samples are kept)."""
    import tracemalloc

    from webui.events.window import LiveWindow

    window = LiveWindow()
    stages = [name for name, _ in STAGES]
    t0 = time.time()
    tracemalloc.start()
    rows, done = [], 0
    for target in checkpoints:
        for i in range(done, target):
            now = t0 + i * 0.004  # 250 requests/s
            rid = uuid.uuid4().hex
            base = {
                "request_id": rid,
                "symbol": "AAPL",
                "horizon": 5,
                "strategy": "chord",
                "cache_hit": False,
                "created_at": now,
                "at": now,
            }
            window.add({**base, "kind": "request", "event": "submitted", "latency_ms": None}, now)
            for stage in stages:
                window.add(
                    {
                        "request_id": rid,
                        "stage": stage,
                        "started_at": now,
                        "finished_at": now + 0.01,
                        "duration_ms": 10.0,
                        "worker": "cpu@b",
                        "queue": "cpu",
                        "pid": 1,
                        "outcome": "ok",
                    },
                    now,
                )
            window.add({**base, "kind": "request", "event": "done", "latency_ms": 120.0}, now)
            if i % 60 == 0:
                window.drain()
            if i % 250 == 0:
                window.point(now, window.stats(now), {"io": 0, "cpu": 0, "gpu": 0})
        done = target
        rows.append((done, tracemalloc.get_traced_memory()[0] / 2**20, len(window.requests)))
    tracemalloc.stop()
    return rows


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class BrowserDashboard:
    """The real dashboard page in headless Chromium, logged in with the staff session."""

    def __init__(self, base_url: str, session_key: str) -> None:
        from playwright.sync_api import sync_playwright

        self._pw = sync_playwright().start()
        self._browser = self._pw.chromium.launch(
            executable_path=shutil.which("chromium") or shutil.which("chromium-browser"),
            args=["--no-sandbox", "--disable-gpu", "--no-first-run"],
        )
        context = self._browser.new_context(viewport={"width": 1400, "height": 1000})
        context.add_cookies([{"name": "sessionid", "value": session_key, "url": base_url}])
        self.page = context.new_page()
        self.page.goto(base_url + "/dashboard/")
        self.page.wait_for_function("window.dashboardStats && window.dashboardStats.connected")
        self.kind = "Chromium (dashboard page)"

    def counters(self) -> dict[str, Any]:
        return self.page.evaluate("({...window.dashboardStats})")

    def reset_max_lag(self) -> None:
        self.page.evaluate("window.dashboardStats.maxLagMs = 0")

    def close(self) -> None:
        self._browser.close()
        self._pw.stop()


class SocketDashboard:
    """Without Chromium: a websocket client in a thread that counts the same way."""

    def __init__(self, ws_url: str, origin: str, session_key: str) -> None:
        import threading

        self.state: dict[str, Any] = {"events": 0, "batches": 0, "lastLagMs": None, "maxLagMs": 0.0}
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=lambda: asyncio.run(self._run(ws_url, origin, session_key)), daemon=True
        )
        self._thread.start()
        while self.state["batches"] == 0:
            time.sleep(0.05)
        self.kind = "websocket client (no Chromium)"

    async def _run(self, ws_url: str, origin: str, key: str) -> None:
        import websockets

        headers = {"Cookie": f"sessionid={key}"}
        connect = websockets.connect(ws_url, origin=origin, additional_headers=headers)  # type: ignore[arg-type]
        async with connect as ws:
            while not self._stop.is_set():
                try:
                    message = json.loads(await asyncio.wait_for(ws.recv(), 0.5))
                except TimeoutError:
                    continue
                if message.get("type") != "batch":
                    continue
                self.state["batches"] += 1
                self.state["events"] += message["events"]
                if message["events"] and message.get("newest_event_at"):
                    lag = max(0.0, (time.time() - message["newest_event_at"]) * 1000)
                    self.state["lastLagMs"] = lag
                    self.state["maxLagMs"] = max(self.state["maxLagMs"], lag)

    def counters(self) -> dict[str, Any]:
        return dict(self.state)

    def reset_max_lag(self) -> None:
        self.state["maxLagMs"] = 0.0

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def _settle(dashboard: Any, quiet: float = 1.0, timeout: float = 20.0) -> None:
    """Wait until no more events arrive, so each rate counts only its own."""
    deadline = time.monotonic() + timeout
    last, since = dashboard.counters()["events"], time.monotonic()
    while time.monotonic() - since < quiet and time.monotonic() < deadline:
        time.sleep(0.1)
        now = dashboard.counters()["events"]
        if now != last:
            last, since = now, time.monotonic()


def run_rate(dashboard: Any, relay_pid: int, rate: int, seconds: float) -> dict[str, Any]:
    _settle(dashboard)
    before = dashboard.counters()
    dashboard.reset_max_lag()
    rss_before, cpu_before = _rss_kib(relay_pid), _cpu_seconds(relay_pid)
    fork = multiprocessing.get_context("fork")
    count = max(1, -(-rate // PUBLISHER_RATE))  # one process per PUBLISHER_RATE events/s
    pipes, publishers = [], []
    for _ in range(count):
        receiver, sender = fork.Pipe(duplex=False)
        publishers.append(fork.Process(target=_publish, args=(rate / count, seconds, sender)))
        pipes.append(receiver)
    for publisher in publishers:
        publisher.start()
    lags = []
    while any(publisher.is_alive() for publisher in publishers):
        lag = dashboard.counters().get("lastLagMs")
        if lag is not None:
            lags.append(lag)
        time.sleep(0.1)
    reports = [receiver.recv() for receiver in pipes]
    for publisher in publishers:
        publisher.join()
    sent = sum(report[0] for report in reports)
    took = max(report[1] for report in reports)
    deadline = time.monotonic() + 10
    while dashboard.counters()["events"] - before["events"] < sent and time.monotonic() < deadline:
        time.sleep(0.05)
    after = dashboard.counters()
    delivered = after["events"] - before["events"]
    lags.sort()
    return {
        "target_per_s": rate,
        "published": sent,
        "published_per_s": sent / took,
        "delivered": delivered,
        "delivered_per_s": delivered / took,
        "batches_per_s": (after["batches"] - before["batches"]) / took,
        "lag_p50_ms": lags[len(lags) // 2] if lags else None,
        "lag_max_ms": after["maxLagMs"],
        "relay_cpu_pct": 100 * (_cpu_seconds(relay_pid) - cpu_before) / took,
        "relay_rss_mib_before": rss_before / 1024,
        "relay_rss_mib_after": _rss_kib(relay_pid) / 1024,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rates", default="500,1000,2000,4000", help="events/s to try")
    parser.add_argument("--seconds", type=float, default=10.0, help="per rate")
    parser.add_argument("--calls", type=int, default=5000, help="calls timed per function")
    parser.add_argument("--tick", type=float, default=0.25, help="relay tick (s)")
    parser.add_argument("--no-browser", action="store_true", help="count with a socket client")
    args = parser.parse_args()
    rates = [int(r) for r in args.rates.split(",") if r.strip()]

    workdir = Path(tempfile.mkdtemp(prefix="stockserve-bench-events-"))
    redis = _setup_environment(workdir)
    from devstack.redis import free_port
    from devstack.supervisor import Supervisor
    from launch import process_catalog
    from loadtests.deployment import listens, serve

    port = free_port()
    log, sup = workdir / "servers.log", Supervisor(restart=False, env=os.environ)
    dashboard: BrowserDashboard | SocketDashboard | None = None
    try:
        session_key = _staff_session()
        relay_argv = [*process_catalog.relay().argv(), "--tick", str(args.tick)]
        relay = sup.add("relay", relay_argv, log_path=log)
        serve(sup, "websocket", process_catalog.websocket("127.0.0.1", port).argv(), listens(port),
              log_path=log, timeout_s=60)  # fmt: skip
        base = f"http://127.0.0.1:{port}"
        if not args.no_browser and (shutil.which("chromium") or shutil.which("chromium-browser")):
            dashboard = BrowserDashboard(base, session_key)
        else:
            dashboard = SocketDashboard(f"ws://127.0.0.1:{port}/ws/dashboard/", base, session_key)

        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        print(
            f"Redis {redis.url}; uvicorn :{port}; relay tick {args.tick} s; "
            f"dashboard: {dashboard.kind}; {os.cpu_count()} CPUs, load {load}\n"
        )
        print(f"1. Cost per call on the task's path ({args.calls} calls each, relay subscribed)")
        for name, figures in measure_cost(args.calls).items():
            print(
                f"   {name:32s} mean {figures['mean_us']:6.0f} µs   "
                f"p50 {figures['p50_us']:6.0f} µs   p99 {figures['p99_us']:6.0f} µs"
            )

        print(
            f"\n2. Events/s delivered to the dashboard ({args.seconds:g} s per rate, "
            f"{EVENTS_PER_REQUEST} events per request)"
        )
        header = (
            "target/s",
            "published/s",
            "delivered",
            "batches/s",
            "lag p50",
            "lag max",
            "relay CPU",
            "relay RSS",
        )
        print("   " + "  ".join(f"{h:>11s}" for h in header))
        rows = []
        for rate in rates:
            row = run_rate(dashboard, relay.pid, rate, args.seconds)
            rows.append(row)
            share = row["delivered"] / row["published"] if row["published"] else 0
            lag50 = "–" if row["lag_p50_ms"] is None else f"{row['lag_p50_ms']:.0f} ms"
            print(
                "   "
                + "  ".join(
                    f"{v:>11s}"
                    for v in (
                        str(rate),
                        f"{row['published_per_s']:.0f}",
                        f"{share:.1%}",
                        f"{row['batches_per_s']:.1f}",
                        lag50,
                        f"{row['lag_max_ms']:.0f} ms",
                        f"{row['relay_cpu_pct']:.0f}%",
                        f"{row['relay_rss_mib_before']:.0f}→{row['relay_rss_mib_after']:.0f} MiB",
                    )
                )
            )
        print("\n3. Memory held by the relay's window while requests stream through it")
        for count, mib, kept in measure_window_memory():
            print(
                f"   after {count:7d} requests ({count * EVENTS_PER_REQUEST:7d} events): "
                f"{mib:5.1f} MiB, {kept} requests kept"
            )
        out = workdir / "bench-events.json"
        out.write_text(json.dumps({"rates": rows}, indent=2), encoding="utf-8")
        print(f"\n   raw figures: {out}")
    finally:
        if dashboard is not None:
            dashboard.close()
        sup.stop()
        redis.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
