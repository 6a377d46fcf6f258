"""`make -C lab abuse`'s clients: the well-behaved ones it measures, the abusive ones beside them.

Each side runs as a process of its own (`python -m lab.abuse_clients polite|abusers
--spec FILE`), which `lab.abuse` puts in a CPU-quota group of its own (the same
groups in both phases), so neither the measuring clients nor the abusers' generators take
the cores the service had when quiet.

Well-behaved (measured, open loop: each question has its time fixed in advance and its
latency counts from it):

* a REST client with a token asking the watchlist's questions (cached) and, one in
  `rest_fresh_every`, a fresh run of a question of its own (`use_cache: false`), then
  following each with `?wait=` until it is final (`rest_arrivals`); a POST refused (429,
  503) is recorded as an admission refusal;
* a registered stream client asking cached and uncached questions and reading each answer
  by its id (`QueueAsker`, threads over `stockserve_client`).

Abusive:

* `flood`: a registered stream client writing entries of `entry_bytes` (fields and
  values together) to its input stream and, while its Redis user may, to another key
  under its prefix, at most `flood_mib_s` (0: as fast as it can); held while the Redis it
  writes to uses more than `guard_mib`, so a Redis without a bound cannot take the
  machine's memory;
* `hoarder`: a registered stream client creating `groups` consumer groups on its output
  stream, asking cached questions and reading answers in some groups, never
  acknowledging;
* two anonymous addresses asking questions no one asked on this market day, each at its
  rate limit (`anonymous_arrivals`), so each one is a new pipeline;
* a rotating anonymous client: each request from a new IPv6 /64 (`rotating_arrivals`);
  over loopback a source address cannot be chosen, so the /64 is sent as
  `X-Forwarded-For` (2001:db8::/32, the documentation prefix), which the stack trusts with
  NUM_PROXIES=1;
* a websocket client holding many sockets on a symbol's feed, their X-Forwarded-For
  spread over a few /64s (`hold_sockets`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import redis
import websockets
from stockserve_client import InputQueue, OutputQueue, protocol
from websockets.asyncio.client import connect
from websockets.typing import Origin

from devstack.supervisor import Interrupted, handle_signals
from loadtests import engine
from loadtests.rawlog import RawLog, Row
from loadtests.workload import PREDICTIONS, Outcome, poll, polled, submitted

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


ADMISSION_REFUSED = "admission refused"  # a POST answered 429 or 503, counted in the error
WAIT_REFUSED = "wait refused"  # a `?wait=` poll answered 429 or 503
REFUSALS = re.compile(rf"({ADMISSION_REFUSED}|{WAIT_REFUSED}) (\d+)")
RETRY_PAUSE_S = 1.0  # after a refusal (the engine's client does not read Retry-After)


def refusals(error: str) -> dict[str, int]:
    """The refusals a well-behaved question met on its way (its row's error)."""
    return {kind: int(n) for kind, n in REFUSALS.findall(error)}


def identified_prediction(
    body: dict[str, Any], max_wait_s: float, headers: Mapping[str, str],
    in_flight: asyncio.Semaphore,
) -> engine.Job:  # fmt: skip
    """A well-behaved client's question: at most its share in flight (a question waits
    its turn on the client's side, and its latency, counted from its scheduled time,
    includes that wait); a POST or a poll refused with 429 or 503 is asked again a moment
    later, until `max_wait_s`. Every refusal is counted in the outcome's error."""

    async def job(client: engine.Client) -> Outcome:
        deadline = time.monotonic() + max_wait_s
        count = {ADMISSION_REFUSED: 0, WAIT_REFUSED: 0}

        def said(outcome: Outcome) -> Outcome:
            met = "; ".join(f"{kind} {n}" for kind, n in count.items() if n)
            return replace(outcome, error="; ".join(filter(None, [met, outcome.error])))

        async with in_flight:
            while True:
                code, answer = await client.json("POST", PREDICTIONS, body, headers=headers)
                if code not in (429, 503) or time.monotonic() >= deadline:
                    break
                count[ADMISSION_REFUSED] += 1
                await asyncio.sleep(RETRY_PAUSE_S)
            first = submitted(code, answer)
            if isinstance(first, Outcome):
                if code in (429, 503):
                    count[ADMISSION_REFUSED] += 1
                return said(first)
            while True:
                path, wait = poll(first, deadline)
                code, answer = await client.json("GET", path, wait_s=wait, headers=headers)
                if code in (429, 503) and time.monotonic() < deadline:
                    count[WAIT_REFUSED] += 1
                    await asyncio.sleep(RETRY_PAUSE_S)
                    continue
                if (final := polled(code, answer, first, deadline, max_wait_s)) is not None:
                    return said(final)

    return job


def rest_arrivals(
    rate: float, seconds: float, token: str, watched: Sequence[str], own: Sequence[Pair],
    address: str, max_wait_s: float, fresh_every: int = 4, in_flight: int = 2,
) -> list[engine.Arrival]:  # fmt: skip
    """The well-behaved REST client: cached questions, and one fresh run in `fresh_every`;
    at most `in_flight` questions at once."""
    headers = {"Authorization": f"Token {token}", "X-Forwarded-For": address}
    gate = asyncio.Semaphore(in_flight)  # bound to the engine's loop at its first use
    arrivals = []
    for i, at in enumerate(engine.steady(rate, seconds)):
        if i % fresh_every == fresh_every - 1:
            symbol, horizon = own[(i // fresh_every) % len(own)]
            body: dict[str, Any] = {"symbol": symbol, "horizon": horizon, "use_cache": False}
            name = "rest uncached"
        else:
            body = {"symbol": watched[i % len(watched)], "horizon": WATCHED_HORIZON}
            name = "rest cached"
        job = identified_prediction(body, max_wait_s, headers, gate)
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


def rotating_address(n: int) -> str:
    """The n-th /64 of 2001:db8::/32 (the documentation prefix): a new /64 for each n."""
    return f"2001:db8:{(n >> 16) & 0xFFFF:x}:{n & 0xFFFF:x}::1"


def rotating_arrivals(
    rate: float, seconds: float, pairs: Sequence[Pair], first: int = 0
) -> list[engine.Arrival]:
    """An anonymous client whose every request comes from a new /64 (as X-Forwarded-For),
    each asking a new question `rate` times a second and never waiting for it."""
    arrivals = []
    for i, at in enumerate(engine.steady(rate, seconds)):
        symbol, horizon = pairs[i % len(pairs)]
        headers = {"X-Forwarded-For": rotating_address(first + i)}
        body = json.dumps({"symbol": symbol, "horizon": horizon}).encode()
        job = engine.one_request("POST", PREDICTIONS, body, headers=headers)
        arrivals.append(engine.Arrival(at, "http", "anonymous rotating /64", job))
    return arrivals


def queue_plan(
    rate: float, seconds: float, watched: Sequence[str], own: Sequence[Pair],
    uncached_every: int = 2,
) -> list[tuple[float, str, str, int]]:  # fmt: skip
    """The well-behaved stream client's questions: (seconds after the start, name, symbol,
    horizon), cached ones and one uncached in `uncached_every` (its own turn through
    `own`)."""
    plan = []
    for i, at in enumerate(engine.steady(rate, seconds)):
        if i % uncached_every == uncached_every - 1:
            symbol, horizon = own[(i // uncached_every + len(own) // 2) % len(own)]
            plan.append((at, "queue uncached", symbol, horizon))
        else:
            plan.append((at, "queue cached", watched[i % len(watched)], WATCHED_HORIZON))
    return plan


# --- the well-behaved stream client


class QueueAsker:
    """Enqueues each planned question at its time (or once one of its `in_flight` is
    answered) and waits for its answer by id."""

    def __init__(
        self, url: str, client: str, max_wait_s: float, prefix: str, in_flight: int = 64
    ) -> None:
        self.input = InputQueue(url, client=client)
        self.output = OutputQueue(url, client=client)
        self.max_wait_s = max_wait_s
        self.prefix = prefix
        self.rows: list[Row] = []
        self._futures: list[Future[Row]] = []
        # At most `in_flight` questions waiting for their answers (a well-behaved client
        # stays under QUEUE_CLIENT_MAX_PENDING); the others wait their turn here, and
        # their latency, counted from their scheduled time, includes that wait.
        self._pool = ThreadPoolExecutor(max_workers=in_flight, thread_name_prefix="queue-asker")
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
        """One question until its answer; one answered `refused` (the client over its
        admission share) is asked again a moment later under a new id, each refusal
        counted, until `max_wait_s` from when it got its turn."""
        deadline = time.time() + self.max_wait_s
        refused, ask = 0, rid
        while True:
            try:
                self.input.enqueue(ask, symbol=symbol, horizon=horizon)
                answer = self.output.query(ask, timeout=max(1.0, deadline - time.time()))
            except redis.RedisError as exc:
                return Row("queue", name, due, (time.time() - due) * 1000, False,
                           type(exc).__name__, error=str(exc)[:300])  # fmt: skip
            if answer is None or answer.status != protocol.REFUSED or time.time() >= deadline:
                break
            refused += 1
            ask = f"{rid}-again-{refused}"
            time.sleep(RETRY_PAUSE_S)
        latency_ms = (time.time() - due) * 1000
        met = f"{ADMISSION_REFUSED} {refused}" if refused else ""
        if answer is None:
            error = "; ".join(filter(None, [met, "no answer in time"]))
            return Row("queue", name, due, latency_ms, False, "none", error=error)
        error = "; ".join(filter(None, [met, answer.error[:300]]))
        return Row("queue", name, due, latency_ms, answer.ok, answer.status,
                   answer.prediction_id, error=error)  # fmt: skip


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


# --- the websocket client


async def hold_sockets(
    ws_base: str, origin: str, symbol: str, sockets: int, addresses: int, open_rate: float,
    until: float,
) -> dict[str, Any]:  # fmt: skip
    """Opens `sockets` websockets on a symbol's feed, `open_rate` a second, their
    X-Forwarded-For going round `addresses` /64s, and holds each until `until` reading what
    comes: how many the service accepted, closed (by code) or refused, and still held at
    the end."""
    outcomes: Counter[str] = Counter()
    held = messages = accepted = 0
    url = f"{ws_base}/ws/symbols/{symbol}/"

    async def one(n: int) -> None:
        nonlocal held, messages, accepted
        headers = {"X-Forwarded-For": rotating_address(0x10000 + n % addresses)}
        try:
            async with connect(url, origin=Origin(origin), additional_headers=headers,
                               open_timeout=10, ping_interval=None) as socket:  # fmt: skip
                accepted += 1
                while (left := until - time.time()) > 0:
                    try:
                        await asyncio.wait_for(socket.recv(), timeout=left)
                        messages += 1
                    except TimeoutError:
                        break
                held += 1
                outcomes["held to the end"] += 1
        except websockets.ConnectionClosed as exc:
            outcomes[f"closed {exc.rcvd.code if exc.rcvd else 'without a code'}"] += 1
        except websockets.InvalidStatus as exc:
            outcomes[f"refused http {exc.response.status_code}"] += 1
        except (OSError, TimeoutError, websockets.InvalidHandshake) as exc:
            outcomes[type(exc).__name__] += 1

    tasks = []
    for n in range(sockets):
        if time.time() >= until:
            break
        tasks.append(asyncio.create_task(one(n)))
        await asyncio.sleep(1 / open_rate)
    await asyncio.gather(*tasks)
    return {"asked": len(tasks), "accepted": accepted, "held_to_the_end": held,
            "messages": messages, "outcomes": dict(outcomes), "addresses": addresses}  # fmt: skip


# --- the two processes


def run_polite(spec: dict[str, Any]) -> None:
    """The well-behaved REST and stream clients, every answer's row to `spec["rows"]`."""
    log = RawLog(spec["rows"])
    own = [(s, h) for s, h in spec["own"]]
    arrivals = rest_arrivals(spec["rest_rate"], spec["seconds"], spec["token"], spec["watched"],
                             own, spec["rest_address"], spec["max_wait"],
                             spec["rest_fresh_every"], spec["rest_in_flight"])  # fmt: skip
    plan = queue_plan(spec["queue_rate"], spec["seconds"], spec["watched"], own,
                      spec["queue_uncached_every"])  # fmt: skip
    asker = QueueAsker(spec["queue_url"], spec["queue_client"], spec["max_wait"], spec["prefix"],
                       spec["queue_in_flight"])  # fmt: skip
    asker.start(plan, spec["epoch"])
    try:
        engine.run(spec["base"], arrivals, log.write, drain_s=spec["max_wait"],
                   start_epoch=spec["epoch"])  # fmt: skip
        for row in asker.join():
            log.write(row)
    finally:
        asker.close()
        log.close()


def run_abusers(spec: dict[str, Any]) -> dict[str, Any]:
    """Every abuser side by side from `spec["epoch"]` for `spec["seconds"]`; what each did.
    The anonymous clients' rows go to `spec["rows"]`."""
    args = argparse.Namespace(**spec)
    admin = redis.Redis.from_url(spec["guard_url"], socket_timeout=5) if spec["guard_url"] else None
    if (delay := spec["epoch"] - time.time()) > 0:
        time.sleep(delay)
    until = spec["epoch"] + spec["seconds"]
    stop = threading.Event()
    results: dict[str, Any] = {}
    pairs = [[(s, h) for s, h in mine] for mine in spec["pairs"]]
    log = RawLog(spec["rows"])

    def anonymous() -> dict[str, Any]:
        arrivals = anonymous_arrivals(spec["addresses"], spec["anon_rate"], spec["seconds"],
                                      pairs[:-1])  # fmt: skip
        if spec["rotate_rate"] > 0:
            arrivals += rotating_arrivals(spec["rotate_rate"], spec["seconds"], pairs[-1])
        return engine.run(spec["base"], arrivals, log.write, drain_s=10.0,
                          start_epoch=spec["epoch"])  # fmt: skip

    def sockets() -> dict[str, Any]:
        return asyncio.run(hold_sockets(spec["ws_base"], spec["base"], spec["watched"][0],
                                        spec["ws_sockets"], spec["ws_addresses"],
                                        spec["ws_open_rate"], until))  # fmt: skip

    jobs: dict[str, Callable[[], dict[str, Any]]] = {
        "flood": lambda: flood(spec["flood_url"], spec["flood_client"], admin, args, until, stop),
        "hoarder": lambda: hoard(spec["hoarder_url"], spec["hoarder_client"], args, until, stop),
        "anonymous": anonymous,
        **({"websockets": sockets} if spec["ws_sockets"] else {}),
    }

    def keep(name: str, job: Callable[[], dict[str, Any]]) -> None:
        try:
            results[name] = job()
        except Exception as exc:  # noqa: BLE001 - reported, the other abusers go on
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
    finally:
        log.close()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="the abuse study's clients, one side per process")
    parser.add_argument("side", choices=("polite", "abusers"))
    parser.add_argument("--spec", type=Path, required=True, help="what to do (JSON, 0600)")
    parser.add_argument("--out", type=Path, help="the abusers' summary (JSON)")
    args = parser.parse_args(argv)
    spec = json.loads(args.spec.read_text(encoding="utf-8"))
    with handle_signals():
        if args.side == "polite":
            run_polite(spec)
            return 0
        results = run_abusers(spec)
    if args.out is not None:
        args.out.write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
