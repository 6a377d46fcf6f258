"""What one hostile stream client costs the service, on private Redis servers of its own.

    python -m benchmarks.queue_bounds trim     # trim_read over 20,000 consumer groups
    python -m benchmarks.queue_bounds flood    # 5 s of 256 KiB entries against serve_stream

`trim`: one client's output stream with 20,000 groups, each holding one unacknowledged
answer (made as the client does: XGROUP CREATE + XREADGROUP); times `trim_read` against
the trimming it replaced (walk every group, `XPENDING` each), alternately, in one run on one
redis-server.

`flood`: a main Redis as the playbooks ran it before (60 MB, `noeviction`), the queue's
own (128 MB, `noeviction`), a migrated throwaway SQLite database, two registered clients
and a real `serve_stream`. For 5 s `billing` writes 256 KiB entries to its input stream as
fast as it can while the service INCRs and LPUSHes on the main Redis every 50 ms and
`acme` asks a question every 200 ms. Prints what billing wrote and what was refused, the
queue Redis's peak memory, the main Redis's writes, acme's answers, and `stream_clients list`.
Figures: docs/clients.md, "Bounds".
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from typing import Any

import redis

from devstack.redis import EmbeddedRedis
from devstack.supervisor import spawn, stop_group
from launch import process_catalog

GROUPS = 20_000
OUT = "stockserve:queue:billing:out"


def walk_every_group(client: redis.Redis, stream: str, ttl: int) -> None:
    """The trimming before the bounds: every group's oldest unread answer, each time."""
    floors = []
    groups: Any = client.xinfo_groups(stream)
    for group in groups:
        if group["pending"]:
            floors.append(client.xpending(stream, group["name"])["min"].decode())
        else:
            floors.append(group["last-delivered-id"].decode())
    if not floors:
        floors.append(f"{int((time.time() - ttl) * 1000)}-0")
    floor = min(floors, key=lambda i: tuple(int(part) for part in i.split("-")))
    client.xtrim(stream, minid=floor, approximate=False)


def trim() -> None:
    server = EmbeddedRedis().start()
    os.environ["REDIS_URL"] = os.environ["QUEUE_REDIS_URL"] = server.url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from serving.stream_bounds import trim_read

    try:
        client = redis.Redis.from_url(server.url)
        client.xadd(OUT, {"request_id": "r", "answer": "{}"})
        pipe = client.pipeline(transaction=False)
        for g in range(GROUPS):
            pipe.xgroup_create(OUT, f"g{g}", id="0")
            pipe.xreadgroup(f"g{g}", "c", {OUT: ">"}, count=1)
        pipe.execute()
        for name, trimming in [
            ("walk every group", walk_every_group),
            ("trim_read", trim_read),
        ] * 2:
            started = time.perf_counter()
            trimming(client, OUT, 86400)
            print(f"{name}: {1000 * (time.perf_counter() - started):.1f} ms over {GROUPS} groups")
    finally:
        server.stop()


def flood(seconds: float = 5.0) -> None:
    var = tempfile.mkdtemp(prefix="queue-flood-")
    main = EmbeddedRedis(maxmemory_mb=60, policy="noeviction").start()
    queue = EmbeddedRedis(
        workdir=f"{var}/queue-redis", password="flood-0123456789abcdef", persist=True,
        maxmemory_mb=128, policy=process_catalog.QUEUE_REDIS_POLICY,
    ).start()  # fmt: skip
    env = {**os.environ, "REDIS_URL": main.url, "QUEUE_REDIS_URL": queue.url, "VAR_DIR": var,
           "DATABASE_URL": f"sqlite:///{var}/db.sqlite3", "PRICE_PROVIDERS": "sample",
           "MENTION_PROVIDERS": "sample", "LOG_LEVEL": "WARNING"}  # fmt: skip

    def manage(*args: str) -> str:
        argv = process_catalog.manage(*args).argv()
        done = subprocess.run(argv, env=env, cwd=process_catalog.ROOT,
                              capture_output=True, text=True, check=True)  # fmt: skip
        return done.stdout

    consumer = None
    try:
        manage("migrate", "-v", "0")
        urls = {}
        for name in ("billing", "acme"):
            printed = manage("stream_clients", "add", name).splitlines()
            urls[name] = next(line for line in printed if line.startswith("redis://"))
        with open(f"{var}/queue.log", "ab") as log:
            consumer = spawn(process_catalog.stream_consumer().argv(), env=env, log=log)
        from stockserve_client import InputQueue, OutputQueue

        InputQueue(urls["acme"], client="acme").enqueue("ready", symbol="!!", horizon=1)
        if OutputQueue(urls["acme"], client="acme").query("ready", timeout=120) is None:
            raise RuntimeError(f"serve_stream did not answer (see {var}/queue.log)")
        figures = _flood(urls, main.url, queue.url, seconds)
        figures["stream_clients list"] = json.loads(manage("stream_clients", "list"))
        print(json.dumps(figures, indent=1))
    finally:
        if consumer is not None:
            stop_group(consumer, grace=10)
        main.stop()
        queue.stop()


def _flood(urls: dict[str, str], main_url: str, queue_url: str, seconds: float) -> dict[str, Any]:
    from stockserve_client import InputQueue, OutputQueue

    stop = time.monotonic() + seconds
    service, queue = redis.Redis.from_url(main_url), redis.Redis.from_url(queue_url)
    written, refused, main_writes, peak = [0], Counter[str](), Counter[str](), [0]
    answers: list[tuple[str | None, float]] = []

    def billing() -> None:
        client, entry = redis.Redis.from_url(urls["billing"]), {"x": b"x" * 256 * 1024}
        while time.monotonic() < stop:
            try:
                client.xadd("stockserve:queue:billing:in", entry)  # type: ignore[arg-type]
                written[0] += 1
            except redis.RedisError as exc:
                refused[type(exc).__name__] += 1
                client = redis.Redis.from_url(urls["billing"])

    def the_service() -> None:
        while time.monotonic() < stop:
            try:
                service.incr("stockserve:throttle:flood")
                service.lpush("celery", "a task")
                main_writes["ok"] += 1
            except redis.RedisError:
                main_writes["failed"] += 1
            peak[0] = max(peak[0], int(queue.info("memory")["used_memory"]))
            time.sleep(0.05)

    def acme() -> None:
        asked = 0
        while time.monotonic() < stop:
            asked += 1
            started = time.monotonic()
            InputQueue(urls["acme"], client="acme").enqueue(f"a-{asked}", symbol="!!", horizon=1)
            answer = OutputQueue(urls["acme"], client="acme").query(f"a-{asked}", timeout=10)
            answers.append((answer.status if answer else None, time.monotonic() - started))
            time.sleep(0.2)

    threads = [threading.Thread(target=work) for work in (billing, the_service, acme)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {
        "billing's 256 KiB entries written": written[0],
        "billing's writes refused": dict(refused),
        "queue Redis peak MB": round(peak[0] / 2**20, 1),
        "main Redis INCR+LPUSH": dict(main_writes),
        "acme's answers": dict(Counter(str(status) for status, _ in answers)),
        "acme's slowest answer s": round(max(s for _, s in answers), 3) if answers else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["trim", "flood"])
    args = parser.parse_args()
    trim() if args.mode == "trim" else flood()
    return 0


if __name__ == "__main__":
    sys.exit(main())
