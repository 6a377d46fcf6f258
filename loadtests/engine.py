"""The one open-loop load engine: every arrival is scheduled in advance, whatever the server does.

Why open loop: a closed-loop client (wrk's connections, Locust's users) waits for an answer
before it sends again, so an overloaded server quietly slows its own load down and its
latency looks better than it is. Here each arrival has a send time fixed before the run
starts, and its latency is measured from that *scheduled* time: waiting for a free
connection, or a client that fell behind, counts against the server's latency, never
hides it (no coordinated omission). Arrivals still unanswered when the drain time is up
are recorded as `unfinished`, with their latency so far.

Why asyncio over raw HTTP/1.1 keep-alive connections: the client shares the machine with
the server it measures, so its own CPU must stay small; one event loop (uvloop when
installed) holds thousands of arrivals in flight where a thread per arrival would not.

Every load the project offers is a schedule over `run`: `make experiment` and the lab's
`cluster-bench` (predictions submitted, then long-polled until final), `bench-api` (one
request per arrival). Each arrival becomes one `rawlog.Row`, the raw data every reported
statistic is computed from.

    python -m loadtests.engine --host http://127.0.0.1:8000 --rate 2 --seconds 30 --cold
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from loadtests import latencies
from loadtests.rawlog import Row
from loadtests.workload import (
    PREDICTIONS,
    Outcome,
    Workload,
    parse_mix,
    poll,
    polled,
    submitted,
)

# --- schedules: seconds after the start at which each arrival is sent


def steady(
    rate: float, seconds: float, *, poisson: bool = False, rng: random.Random | None = None
) -> list[float]:
    """Every 1/rate s for `seconds` (or exponential gaps with the same mean)."""
    if rate <= 0 or seconds <= 0:
        raise ValueError("rate and duration must be positive")
    if not poisson:
        return [i / rate for i in range(max(1, round(rate * seconds)))]
    rng = rng or random.Random(0)
    offsets, t = [], rng.expovariate(rate)
    while t < seconds:
        offsets.append(t)
        t += rng.expovariate(rate)
    return offsets


def steps(schedule: Sequence[tuple[float, float]]) -> list[float]:
    """Evenly spaced arrivals for consecutive (rate per second, seconds) steps."""
    offsets, start = [], 0.0
    for rate, seconds in schedule:
        if rate <= 0 or seconds <= 0:
            raise ValueError("every step needs a positive rate and duration")
        offsets += [start + i / rate for i in range(max(1, round(rate * seconds)))]
        start += seconds
    return offsets


# --- the HTTP client


class Client:
    """HTTP/1.1 keep-alive connections to one server, opened on demand up to a bound."""

    def __init__(self, base_url: str, connections: int = 256, timeout_s: float = 40.0) -> None:
        parts = urlsplit(base_url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.prefix = parts.path.rstrip("/")
        self.timeout_s = timeout_s
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        self._slots = asyncio.Semaphore(connections)

    async def request(
        self,
        method: str,
        path: str,
        body: bytes = b"",
        *,
        wait_s: float = 0.0,
        headers: Mapping[str, str] | None = None,
    ) -> tuple[int, bytes]:
        """One request; its status and body. A keep-alive connection the server closed
        while idle (gunicorn closes them after 2 s) is retried once on a new one, as HTTP
        clients do; anything else is raised. `headers` are sent besides the engine's own
        (a token, or the address a trusted proxy would append)."""
        payload = self._payload(method, path, body, headers or {})
        await self._slots.acquire()
        try:
            for attempt in range(2):
                reused = bool(self._idle) and attempt == 0
                reader, writer = (
                    self._idle.pop()
                    if reused
                    else await asyncio.open_connection(self.host, self.port)
                )
                try:
                    writer.write(payload)
                    status, answer, keep = await asyncio.wait_for(
                        _read_response(reader), self.timeout_s + wait_s
                    )
                except (asyncio.IncompleteReadError, ConnectionError) as exc:
                    writer.close()
                    if reused and not getattr(exc, "partial", b""):
                        continue
                    raise
                except BaseException:
                    writer.close()
                    raise
                if keep:
                    self._idle.append((reader, writer))
                else:
                    writer.close()
                return status, answer
            raise ConnectionError("no answer on a fresh connection")  # not reached
        finally:
            self._slots.release()

    async def json(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        *,
        wait_s: float = 0.0,
        headers: Mapping[str, str] | None = None,
    ) -> tuple[int, dict[str, Any]]:
        encoded = json.dumps(body).encode() if body is not None else b""
        status, raw = await self.request(method, path, encoded, wait_s=wait_s, headers=headers)
        try:
            return status, json.loads(raw)
        except ValueError:
            return status, {"error": raw[:200].decode(errors="replace")}

    def close(self) -> None:
        for _, writer in self._idle:
            writer.close()
        self._idle.clear()

    def _payload(self, method: str, path: str, body: bytes, headers: Mapping[str, str]) -> bytes:
        lines = [
            f"{method} {self.prefix}{path} HTTP/1.1",
            f"Host: {self.host}:{self.port}",
            "Connection: keep-alive",
            "Content-Type: application/json",
            *(f"{name}: {value}" for name, value in headers.items()),
        ]
        if body:
            lines.append(f"Content-Length: {len(body)}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, bytes, bool]:
    """One whole response (Content-Length or chunked): status, body, keep-alive."""
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    headers = {}
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip().lower()
    body = b""
    if headers.get(b"transfer-encoding") == b"chunked":
        chunks = []
        while size := int((await reader.readuntil(b"\r\n")).strip(), 16):
            chunks.append((await reader.readexactly(size + 2))[:-2])
        await reader.readuntil(b"\r\n")
        body = b"".join(chunks)
    elif length := int(headers.get(b"content-length", b"0")):
        body = await reader.readexactly(length)
    return status, body, headers.get(b"connection") != b"close"


# --- what one arrival does


Job = Callable[[Client], Awaitable[Outcome]]


@dataclass(frozen=True)
class Arrival:
    at: float  # seconds after the start
    kind: str  # `http` (one request), `prediction` (submitted, then followed to its end)
    name: str
    job: Job


def one_request(
    method: str, path: str, body: bytes = b"", headers: Mapping[str, str] | None = None
) -> Job:
    """One request, its status the outcome: the fast path's load."""

    async def job(client: Client) -> Outcome:
        status, _ = await client.request(method, path, body, headers=headers)
        return Outcome(200 <= status < 300, str(status))

    return job


def prediction(
    body: dict[str, Any], max_wait_s: float, headers: Mapping[str, str] | None = None
) -> Job:
    """POST, then long-poll `?wait=` until the prediction is done or failed (the steps of
    `workload.submit_and_wait`, awaited instead of blocking)."""

    async def job(client: Client) -> Outcome:
        first = submitted(*await client.json("POST", PREDICTIONS, body, headers=headers))
        if isinstance(first, Outcome):
            return first
        deadline = time.monotonic() + max_wait_s
        while True:
            path, wait = poll(first, deadline)
            answer = await client.json("GET", path, wait_s=wait, headers=headers)
            if (final := polled(*answer, first, deadline, max_wait_s)) is not None:
                return final

    return job


def predictions(workload: Workload, offsets: Sequence[float], rng: random.Random) -> list[Arrival]:
    """A prediction of the workload's mix at each offset."""
    name = workload.strategy or "default"
    return [
        Arrival(
            at,
            "prediction",
            name,
            prediction(workload.body(workload.pick(rng)), workload.max_wait_s),
        )
        for at in offsets
    ]


# --- the engine


def _row(arrival: Arrival, epoch: float, latency_ms: float, outcome: Outcome) -> Row:
    return Row(
        arrival.kind,
        arrival.name,
        epoch + arrival.at,
        latency_ms,
        outcome.ok,
        outcome.status,
        outcome.prediction_id,
        outcome.cache_hit,
        outcome.error,
    )


async def drive(
    base_url: str,
    arrivals: Sequence[Arrival],
    record: Callable[[Row], None],
    *,
    drain_s: float,
    max_in_flight: int = 256,
    connections: int | None = None,
    start_epoch: float | None = None,
) -> dict[str, Any]:
    """Send each arrival at its time; record one row per arrival; then drain. An arrival
    waiting for one of the `connections` (default: one per arrival in flight) is late,
    and its lateness counts; beyond `max_in_flight` arrivals are dropped and recorded."""
    client = Client(base_url, connections=connections or max_in_flight)
    epoch = time.time() if start_epoch is None else start_epoch
    start = time.perf_counter() + (epoch - time.time())
    in_flight: dict[asyncio.Task[None], Arrival] = {}
    dropped = peak = 0

    async def arrive(arrival: Arrival, due: float) -> None:
        try:
            outcome = await arrival.job(client)
        except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError) as exc:
            outcome = Outcome(False, type(exc).__name__, error=str(exc))
        latency_ms = (time.perf_counter() - due) * 1000
        record(_row(arrival, epoch, latency_ms, outcome))

    try:
        for arrival in sorted(arrivals, key=lambda a: a.at):
            due = start + arrival.at
            if (delay := due - time.perf_counter()) > 0:
                await asyncio.sleep(delay)
            if len(in_flight) >= max_in_flight:
                dropped += 1
                record(
                    _row(arrival, epoch, 0.0, Outcome(False, "dropped", error="at max in-flight"))
                )
                continue
            task = asyncio.create_task(arrive(arrival, due))
            in_flight[task] = arrival
            task.add_done_callback(in_flight.pop)
            peak = max(peak, len(in_flight))
        if in_flight:
            await asyncio.wait(list(in_flight), timeout=drain_s)
        unfinished = [arrival for task, arrival in in_flight.items() if not task.done()]
        now = time.perf_counter()
        for arrival in unfinished:
            late = Outcome(False, "unfinished", error=f"not answered {drain_s:.0f} s after the end")
            record(_row(arrival, epoch, (now - start - arrival.at) * 1000, late))
    finally:  # also when the run itself is cancelled (the caller was interrupted)
        pending = list(in_flight)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        client.close()
    return {
        "arrivals": len(arrivals),
        "dropped": dropped,
        "unfinished": len(unfinished),
        "peak_in_flight": peak,
        "elapsed_s": time.perf_counter() - start,
    }


def run(
    base_url: str, arrivals: Sequence[Arrival], record: Callable[[Row], None], **options: Any
) -> dict[str, Any]:
    """`drive` on an event loop of its own thread (uvloop when installed) while this thread
    waits. So a signal handler's exception (Ctrl-C, SIGTERM: `procs.handle_signals`) is
    raised here, in the caller, and stops the loop: uvloop running in the main thread
    would report it and carry on."""
    box: dict[str, Any] = {}
    ready = threading.Event()

    def loop_thread() -> None:
        loop = _new_event_loop()
        task = loop.create_task(drive(base_url, arrivals, record, **options))
        box.update(loop=loop, task=task)
        ready.set()
        try:
            box["result"] = loop.run_until_complete(task)
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
            box["error"] = exc
        finally:
            loop.close()

    thread = threading.Thread(target=loop_thread, name="load-engine", daemon=True)
    thread.start()
    try:
        while thread.is_alive():
            thread.join(0.25)
    except BaseException:
        if ready.wait(5):
            box["loop"].call_soon_threadsafe(box["task"].cancel)
        thread.join(10)
        raise
    if "error" in box:
        raise box["error"]
    return dict(box["result"])


def _new_event_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def summary(rows: Sequence[Row], elapsed_s: float) -> dict[str, Any]:
    """Exact percentiles of the successful arrivals; what became of the others."""
    ok = [r.latency_ms for r in rows if r.ok]
    statuses: dict[str, int] = {}
    for row in rows:
        statuses[row.status] = statuses.get(row.status, 0) + 1
    return {
        **latencies.summarize(ok, len(rows) - len(ok), elapsed_s),
        "requests": len(rows),
        "achieved_rps": round(len(rows) / elapsed_s, 1) if elapsed_s else None,
        "statuses": dict(sorted(statuses.items())),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="http://127.0.0.1:8000")
    parser.add_argument("--rate", type=float, required=True, help="arrivals per second")
    parser.add_argument("--seconds", type=float, default=30, help="seconds of arrivals")
    parser.add_argument("--drain", type=float, default=60, help="seconds to wait afterwards")
    parser.add_argument("--poisson", action="store_true", help="exponential inter-arrivals")
    parser.add_argument("--symbols", default="AAPL,MSFT,IBM,GOOG")
    parser.add_argument("--strategy", default="")
    parser.add_argument("--horizon", type=int, default=5)
    parser.add_argument("--cold", action="store_true", help="skip the cache and warm start")
    args = parser.parse_args(argv)
    workload = Workload(parse_mix(args.symbols), args.horizon, args.strategy or None, args.cold)
    rng = random.Random(0)
    offsets = steady(args.rate, args.seconds, poisson=args.poisson, rng=rng)
    rows: list[Row] = []
    info = run(args.host, predictions(workload, offsets, rng), rows.append, drain_s=args.drain)
    print(json.dumps({**info, **summary(rows, info["elapsed_s"])}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
