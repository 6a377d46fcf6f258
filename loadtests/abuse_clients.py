"""`make abuse`'s clients: the well-behaved ones it measures and the abusive ones beside them.

Well-behaved (measured, open loop: each question has its time fixed in advance and its
latency counts from it):

* a REST client with a token asking the watchlist's questions (cached) and, one in four,
  a fresh run of a question of its own (`use_cache: false`), then following each with
  `?wait=` until it is final (`rest_arrivals`, for `loadtests.engine`);
* a registered stream client asking cached and uncached questions and reading each answer
  by its id (`QueueAsker`, threads over `stockserve_client`).

Abusive (`python -m loadtests.abuse_clients`, a process of its own so its work does not
share the measuring process's interpreter):

* `flood`: a registered stream client writing entries of `--entry-bytes` (fields and
  values together) to its input stream and, while its Redis user may, to another key
  under its prefix, at most
  `--flood-mib-s` (0: as fast as it can); held while the Redis it writes to uses more
  than `--guard-mib`, so a Redis without a bound cannot take the machine's memory;
* `hoarder`: a registered stream client creating `--groups` consumer groups on its output
  stream, asking cached questions and reading answers in some groups, never
  acknowledging.

And two anonymous addresses asking questions no one asked on this market day, each at
its rate limit (`anonymous_arrivals`, for the engine), so each one is a new pipeline.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import redis
from stockserve_client import InputQueue, OutputQueue, protocol

from devstack.supervisor import Interrupted, handle_signals
from loadtests import engine
from loadtests.rawlog import Row
from loadtests.workload import PREDICTIONS

WATCHED_HORIZON = 5  # make run's watchlist: PRECOMPUTE_HORIZONS
OWN_HORIZONS = (7, 14, 21)  # the well-behaved clients' uncached questions; abusers skip them
MAX_HORIZON = protocol.MAX_HORIZON
Pair = tuple[str, int]


# --- what each client asks


def own_pairs(symbols: Sequence[str]) -> list[Pair]:
    """The well-behaved clients' uncached questions, in turn."""
    return [(s, h) for h in OWN_HORIZONS for s in symbols]


def abuser_pairs(symbols: Sequence[str], addresses: int, seed: int = 0) -> list[list[Pair]]:
    """Each address's questions: every symbol and horizon but the watchlist's and the
    well-behaved clients', shuffled and dealt out, so no two addresses ask the same one
    and an address asks one again only after going through all of its own (each
    address's share takes longer than a replay day, so every question is new that day)."""
    skip = {WATCHED_HORIZON, *OWN_HORIZONS}
    pairs = [(s, h) for s in symbols for h in range(1, MAX_HORIZON + 1) if h not in skip]
    random.Random(seed).shuffle(pairs)
    return [pairs[i::addresses] for i in range(addresses)]


def rest_arrivals(
    rate: float, seconds: float, token: str, watched: Sequence[str], own: Sequence[Pair],
    address: str, max_wait_s: float,
) -> list[engine.Arrival]:  # fmt: skip
    """The well-behaved REST client: three cached questions, then one fresh run."""
    headers = {"Authorization": f"Token {token}", "X-Forwarded-For": address}
    arrivals = []
    for i, at in enumerate(engine.steady(rate, seconds)):
        if i % 4 == 3:
            symbol, horizon = own[(i // 4) % len(own)]
            body: dict[str, Any] = {"symbol": symbol, "horizon": horizon, "use_cache": False}
            name = "rest uncached"
        else:
            body = {"symbol": watched[i % len(watched)], "horizon": WATCHED_HORIZON}
            name = "rest cached"
        job = engine.prediction(body, max_wait_s, headers=headers)
        arrivals.append(engine.Arrival(at, "prediction", name, job))
    return arrivals


def anonymous_arrivals(
    addresses: Sequence[str], rate: float, seconds: float, pairs: Sequence[Sequence[Pair]]
) -> list[engine.Arrival]:
    """Each address POSTs a new question `rate` times a second and never waits for it."""
    arrivals = []
    for n, (address, mine) in enumerate(zip(addresses, pairs, strict=True)):
        headers = {"X-Forwarded-For": address}
        offset = n / (rate * len(addresses))  # the addresses take turns
        for i, at in enumerate(engine.steady(rate, seconds)):
            symbol, horizon = mine[i % len(mine)]
            body = json.dumps({"symbol": symbol, "horizon": horizon}).encode()
            job = engine.one_request("POST", PREDICTIONS, body, headers=headers)
            arrivals.append(engine.Arrival(offset + at, "http", f"anonymous {address}", job))
    return arrivals


def queue_plan(
    rate: float, seconds: float, watched: Sequence[str], own: Sequence[Pair]
) -> list[tuple[float, str, str, int]]:
    """The well-behaved stream client's questions: (seconds after the start, name, symbol,
    horizon), a cached one and an uncached one in turn (its own turn through `own`)."""
    plan = []
    for i, at in enumerate(engine.steady(rate, seconds)):
        if i % 2:
            symbol, horizon = own[(i // 2 + len(own) // 2) % len(own)]
            plan.append((at, "queue uncached", symbol, horizon))
        else:
            plan.append((at, "queue cached", watched[(i // 2) % len(watched)], WATCHED_HORIZON))
    return plan


# --- the well-behaved stream client


class QueueAsker:
    """Enqueues each planned question at its time and waits for its answer by id."""

    def __init__(self, url: str, client: str, max_wait_s: float, prefix: str) -> None:
        self.input = InputQueue(url, client=client)
        self.output = OutputQueue(url, client=client)
        self.max_wait_s = max_wait_s
        self.prefix = prefix
        self.rows: list[Row] = []
        self._futures: list[Future[Row]] = []
        self._pool = ThreadPoolExecutor(max_workers=64, thread_name_prefix="queue-asker")
        self._thread: threading.Thread | None = None

    def start(self, plan: Sequence[tuple[float, str, str, int]], epoch: float) -> None:
        def schedule() -> None:
            for i, (at, name, symbol, horizon) in enumerate(plan):
                if (delay := epoch + at - time.time()) > 0:
                    time.sleep(delay)
                rid = f"{self.prefix}-{i}"
                self._futures.append(
                    self._pool.submit(self._ask, rid, epoch + at, name, symbol, horizon)
                )

        self._thread = threading.Thread(target=schedule, name="queue-schedule", daemon=True)
        self._thread.start()

    def join(self) -> list[Row]:
        """Every planned question's row, once each has its answer or timed out."""
        if self._thread is not None:
            self._thread.join()
        self.rows = [future.result() for future in self._futures]
        self._pool.shutdown()
        return self.rows

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _ask(self, rid: str, due: float, name: str, symbol: str, horizon: int) -> Row:
        try:
            self.input.enqueue(rid, symbol=symbol, horizon=horizon)
            answer = self.output.query(rid, timeout=self.max_wait_s)
        except redis.RedisError as exc:
            return Row("queue", name, due, (time.time() - due) * 1000, False,
                       type(exc).__name__, error=str(exc)[:300])  # fmt: skip
        latency_ms = (time.time() - due) * 1000
        if answer is None:
            return Row("queue", name, due, latency_ms, False, "none", error="no answer in time")
        return Row("queue", name, due, latency_ms, answer.ok, answer.status,
                   answer.prediction_id, error=answer.error[:300])  # fmt: skip


# --- the abusive stream clients


def error_kind(exc: Exception) -> str:
    """What kind of refusal: redis-py's class for the errors it knows (OutOfMemoryError,
    NoPermissionError...; it strips their code from the message), else the message's
    first words."""
    if type(exc) is redis.ResponseError:
        return "ResponseError: " + " ".join(str(exc).split()[:6])
    return type(exc).__name__


class Pace:
    """Sleeps so that what was sent stays at most `per_second` (0: no limit)."""

    def __init__(self, per_second: float) -> None:
        self.per_second = per_second
        self.started = time.monotonic()
        self.sent = 0.0

    def add(self, amount: float) -> None:
        self.sent += amount
        if self.per_second > 0:
            ahead = self.sent / self.per_second - (time.monotonic() - self.started)
            if ahead > 0:
                time.sleep(ahead)


def used_memory(admin: redis.Redis | None) -> int | None:
    if admin is None:
        return None
    try:
        return int(admin.info("memory")["used_memory"])
    except redis.RedisError:
        return None


def flood_entry(request_id: str, size: int) -> dict[str, bytes]:
    """An entry of `size` bytes, its fields' names and values together: a question (the
    watchlist's, answered from the cache) padded to the size, or only a pad."""
    fields = {"pad": b""}
    if request_id:
        fields = {"request_id": request_id.encode(), "symbol": b"AAPL",
                  "horizon": str(WATCHED_HORIZON).encode(), **fields}  # fmt: skip
    used = sum(len(name) + len(value) for name, value in fields.items())
    fields["pad"] = b"x" * max(0, size - used)
    return fields


def flood(
    url: str, client: str, admin: redis.Redis | None, args: argparse.Namespace,
    until: float, stop: threading.Event,
) -> dict[str, Any]:  # fmt: skip
    """Writes entries of `args.entry_bytes`: questions with a pad on its input stream and
    pads on another key of its prefix, in turn, while its user may write there."""
    keys = protocol.client_keys(client)
    server = redis.Redis.from_url(url, socket_timeout=10, socket_connect_timeout=5)
    targets = [keys.input, f"stockserve:queue:{client}:junk"]
    errors: Counter[str] = Counter()
    written = junk = n = 0
    pace = Pace(args.flood_mib_s * 1024 * 1024)
    guard_hit = False
    checked = 0.0
    while time.time() < until and not stop.is_set():
        if time.monotonic() - checked > 0.25:
            checked = time.monotonic()
            used = used_memory(admin)
            if used is not None and used >= args.guard_mib * 1024 * 1024:
                guard_hit = True
                time.sleep(0.25)
                continue
        target = targets[n % len(targets)]
        n += 1
        fields = flood_entry(f"flood-{n}" if target == keys.input else "", args.entry_bytes)
        try:
            server.xadd(target, fields)  # type: ignore[arg-type]
            written += 1
            junk += target != keys.input
        except redis.ResponseError as exc:
            errors[error_kind(exc)] += 1
            if isinstance(exc, redis.exceptions.NoPermissionError) and target != keys.input:
                targets.remove(target)
        except redis.RedisError as exc:  # cut off: try again a moment later, as a client would
            errors[error_kind(exc)] += 1
            time.sleep(0.5)
        pace.add(args.entry_bytes)
    return {
        "entry_bytes": args.entry_bytes,
        "mib_s_cap": args.flood_mib_s,
        "written": written,
        "junk_written": junk,
        "written_bytes": written * args.entry_bytes,
        "errors": dict(errors),
        "guard_hit": guard_hit,
        "junk_allowed_to_the_end": len(targets) == 2,
    }


def hoard(
    url: str, client: str, args: argparse.Namespace, until: float, stop: threading.Event
) -> dict[str, Any]:
    """Creates consumer groups on its output stream, asks cached questions, and reads
    answers in its groups without ever acknowledging them."""
    keys = protocol.client_keys(client)
    server = redis.Redis.from_url(url, socket_timeout=30, socket_connect_timeout=5)
    asker = InputQueue(url, client=client)
    errors: Counter[str] = Counter()
    created = 0
    for start in range(0, args.groups, 500):
        if stop.is_set() or time.time() >= until:
            break
        pipe = server.pipeline(transaction=False)
        for i in range(start, min(start + 500, args.groups)):
            pipe.xgroup_create(keys.output, f"hoard-{i}", id="0", mkstream=True)
        try:
            results = pipe.execute(raise_on_error=False)
        except redis.RedisError as exc:
            errors[error_kind(exc)] += 1
            continue
        for result in results:
            if isinstance(result, Exception):
                errors[error_kind(result)] += 1
            else:
                created += 1
    questions = unacked = n = 0
    pace = Pace(args.hoarder_rate)
    read_at = 0.0
    while time.time() < until and not stop.is_set():
        try:
            asker.enqueue(f"hoard-{n}", symbol="AAPL", horizon=WATCHED_HORIZON)
            questions += 1
            if time.monotonic() - read_at >= 1.0 and created:
                read_at = time.monotonic()
                for g in range(n % created, n % created + 10):
                    read: Any = server.xreadgroup(f"hoard-{g % created}", "hoarder",
                                                  {keys.output: ">"}, count=100)  # fmt: skip
                    unacked += sum(len(entries) for _, entries in read or [])
        except redis.ResponseError as exc:
            errors[error_kind(exc)] += 1
        except redis.RedisError as exc:
            errors[error_kind(exc)] += 1
            time.sleep(0.5)
        n += 1
        pace.add(1)
    return {
        "groups_asked": args.groups,
        "groups_created": created,
        "questions": questions,
        "read_unacked": unacked,
        "errors": dict(errors),
    }


def run_abusers(args: argparse.Namespace) -> dict[str, Any]:
    """Flood and hoarder side by side for `args.seconds`; what each did."""
    admin_url = os.environ.get("ABUSE_GUARD_URL", "")
    admin = redis.Redis.from_url(admin_url, socket_timeout=5) if admin_url else None
    until = time.time() + args.seconds
    stop = threading.Event()
    results: dict[str, Any] = {}
    jobs: dict[str, Callable[[], dict[str, Any]]] = {
        "flood": lambda: flood(
            os.environ["ABUSE_FLOOD_URL"], args.flood_client, admin, args, until, stop
        ),  # fmt: skip
        "hoarder": lambda: hoard(
            os.environ["ABUSE_HOARDER_URL"], args.hoarder_client, args, until, stop
        ),  # fmt: skip
    }

    def keep(name: str, job: Callable[[], dict[str, Any]]) -> None:
        try:
            results[name] = job()
        except Exception as exc:  # noqa: BLE001 - reported, the other abuser goes on
            results[name] = {"crashed": f"{type(exc).__name__}: {exc}"}

    threads = [threading.Thread(target=keep, args=item, daemon=True) for item in jobs.items()]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            while thread.is_alive():
                thread.join(0.25)
    except Interrupted:
        stop.set()
        for thread in threads:
            thread.join(15)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="make abuse's abusive stream clients")
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--out", type=Path, required=True, help="where the summary goes (JSON)")
    parser.add_argument("--flood-client", default="flood")
    parser.add_argument("--hoarder-client", default="hoarder")
    parser.add_argument("--entry-bytes", type=int, default=256 * 1024)
    parser.add_argument("--flood-mib-s", type=float, default=100.0)
    parser.add_argument("--guard-mib", type=float, default=1536.0)
    parser.add_argument("--groups", type=int, default=20000)
    parser.add_argument("--hoarder-rate", type=float, default=10.0)
    args = parser.parse_args(argv)
    with handle_signals():
        results = run_abusers(args)
    args.out.write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
