"""A Redis SIGKILL under `make run` with cold work in flight and a CPU hog: how every
request ended, what was dispatched again, and whether any pipeline ran as two live copies.

    python -m lab.redis_kill_check [--requests 40] [--no-hog] [--root DIR]

A `make run` stack of its own (`lab.harness.Stack`: private Redis with its
append-only file, database, ports; make run's recovery settings: PREDICTION_STALL_SECONDS
60, PREDICTION_TIMEOUT 300, SWEEP_INTERVAL 10) is sent `--requests` distinct cold
questions from a client with a token, so they take the usual queues (`use_cache` and
`warm_start` off, every model trained) while a busy loop takes
one core; once they are in flight its Redis is SIGKILLed, and the launcher starts it again.
Until every request ends, the broker is read every second: a request with messages of two
different dispatches (two root task ids) at once ran as two live copies. Then each request's
row says how it ended and how many times it was dispatched, and its stage records whether a
stage ran twice. `--root` runs another checkout's stack (a `git worktree` of an older
commit) with this measuring code. The report goes to lab/reports/.
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psutil
import redis
import requests

from devstack.supervisor import Supervisor
from lab.harness import ROOT, Stack, header, study
from launch import stack_file
from launch.groups import signal_pids
from loadtests.deployment import TRAIN_WHEN_COLD, wait_until
from loadtests.report import machine

SETTINGS = {
    **TRAIN_WHEN_COLD,
    "ADMISSION_MAX_IN_FLIGHT": "100",  # every question is admitted: the check is recovery
    "ADMISSION_CLIENT_SHARE": "1.0",
    "ANONYMOUS_FRESH_RUNS": "1",
}
QUEUES = ("io", "cpu", "gpu")
PRIORITY_LISTS = ("", "\x06\x163", "\x06\x166", "\x06\x169")  # kombu's lists per priority
REQUEST_KWARG = re.compile(r"'request_id': '([0-9a-f-]{36})'")
FIRST_ARG = re.compile(r"^\('([0-9a-f-]{36})'")
WAITED = "waited in the queue until its deadline"
LOST = "The pipeline was lost"  # the sweeper's giving up after PREDICTION_ATTEMPTS


def request_of(headers: dict[str, Any]) -> str:
    """The prediction a pipeline task message works for (its first argument or keyword)."""
    found = REQUEST_KWARG.search(str(headers.get("kwargsrepr") or "")) or FIRST_ARG.search(
        str(headers.get("argsrepr") or "")
    )
    return found.group(1) if found else ""


class CopyWatch(threading.Thread):
    """Reads the broker every second; notes each request seen with messages of two
    dispatches (root task ids) at the same time."""

    def __init__(self, url: str) -> None:
        super().__init__(name="copy-watch", daemon=True)
        self.client = redis.Redis.from_url(url, socket_timeout=5)
        self.stopped = threading.Event()
        self.doubled: dict[str, list[str]] = {}
        self.looks = 0

    def run(self) -> None:
        while not self.stopped.wait(1.0):
            try:
                self.look()
            except (redis.RedisError, OSError, ValueError):
                continue  # Redis away or loading: the next look

    def look(self) -> None:
        pipe = self.client.pipeline(transaction=False)
        for queue in QUEUES:
            for suffix in PRIORITY_LISTS:
                pipe.lrange(f"{queue}{suffix}", 0, -1)
        pipe.hvals("unacked")
        *lists, unacked = pipe.execute()
        payloads = [json.loads(raw) for raws in lists for raw in raws]
        payloads += [json.loads(raw)[0] for raw in unacked]
        roots: dict[str, set[str]] = {}
        for payload in payloads:
            headers = payload.get("headers") or {}
            request_id = request_of(headers)
            if request_id:
                roots.setdefault(request_id, set()).add(
                    str(headers.get("root_id") or headers["id"])
                )
        for request_id, seen in roots.items():
            if len(seen) > 1:
                self.doubled[request_id] = sorted(seen)
        self.looks += 1


def rows(db: Path) -> dict[str, dict[str, Any]]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as con:
        found = con.execute(
            "SELECT id, status, attempts, error FROM predictions_predictionrequest"
        ).fetchall()
    return {
        str(pk).replace("-", ""): {"status": status, "attempts": attempts, "error": error}
        for pk, status, attempts, error in found
    }


def redis_url(stack: Stack) -> str:
    """The stack's Redis: from its stack file, else (an older checkout's launcher writes
    none) from the environment its children were given."""
    url = stack_file.running(stack.var_dir).get("REDIS_URL")
    if url:
        return url
    assert stack.proc is not None
    for child in psutil.Process(stack.proc.pid).children(recursive=True):
        try:
            url = child.environ().get("REDIS_URL")
        except psutil.Error:
            continue
        if url:
            return url
    raise RuntimeError("no process of the stack names its REDIS_URL")


def redis_pid(url: str) -> int:
    port = urlsplit(url).port
    [pid] = {
        c.pid for c in psutil.net_connections("tcp")
        if c.laddr and c.laddr.port == port and c.status == psutil.CONN_LISTEN and c.pid
    }  # fmt: skip
    return int(pid)


def run(args: argparse.Namespace, sup: Supervisor, workdir: Path) -> dict[str, Any]:
    stack = Stack(sup, workdir / "var", workdir / "logs", extra=SETTINGS, root=args.root)
    print(f"starting the stack from {args.root} (logs in {workdir / 'logs'})…", flush=True)
    load = {"before_start": machine()["load_average"]}
    stack.start(timeout_s=600)
    url = redis_url(stack)
    if not args.no_hog:  # a busy loop on one of the two cores, as another stack's work is
        sup.add("hog", [sys.executable, "-c", "while True: pass"], log_path=workdir / "hog.log")
    api = f"{stack.base}/api/v1/predictions/"
    # An identified client's cold work takes the usual queues (anonymous work would take
    # the spare lane, a niced worker of a process per core, and never run three at once).
    headers = {"Authorization": f"Token {stack.manage('create_api_token', 'redis-kill')}"}
    symbols = [s["symbol"] for s in requests.get(f"{stack.base}/api/v1/symbols/",
                                                  timeout=10).json()["offline"]]  # fmt: skip
    questions = [(s, h) for h in range(1, 30) for s in symbols][: args.requests]
    watch = CopyWatch(url)
    watch.start()
    ids = []
    sent = time.time()
    for symbol, horizon in questions:
        body = {"symbol": symbol, "horizon": horizon, "use_cache": False, "warm_start": False}
        response = requests.post(api, json=body, headers=headers, timeout=30)
        response.raise_for_status()
        ids.append(response.json()["id"])
    keys = [i.replace("-", "") for i in ids]
    db = stack.var_dir / "db.sqlite3"

    def running() -> bool:
        return sum(rows(db)[k]["status"] == "running" for k in keys) >= 3

    wait_until(running, time.monotonic() + 120, "three requests running", sup)
    load["at_kill"] = machine()["load_average"]
    killed = time.time()
    signal_pids([redis_pid(url)])
    log = next(stack.logs.glob("stack-*.log"))
    wait_until(lambda: "redis restarted" in log.read_text(errors="replace"),
               time.monotonic() + 60, "the launcher restarting Redis", sup)  # fmt: skip
    restarted = time.time()

    def ended() -> bool:
        found = rows(db)
        return all(found[k]["status"] in ("done", "failed") for k in keys)

    wait_until(ended, time.monotonic() + args.timeout, "every request ending", sup)
    finished = time.time()
    load["at_end"] = machine()["load_average"]
    watch.stopped.set()
    watch.join()
    final = rows(db)
    repeated = {}
    for request_id in ids:
        body = requests.get(f"{api}{request_id}/", headers=headers, timeout=30).json()
        runs = Counter(s["stage"] for s in body.get("stages", []) if s.get("outcome") != "late")
        twice = sorted(stage for stage, n in runs.items() if n > 1)
        if twice:
            repeated[request_id] = twice
    said = log.read_text(errors="replace")
    errors = [final[k]["error"] for k in keys if final[k]["status"] == "failed"]
    lost = [e for e in errors if e.startswith(LOST)]
    at_deadline = [e for e in errors if "deadline" in e and e not in lost]
    return {
        **header("lab.redis_kill_check", args.root),
        "hog": not args.no_hog,
        "load_average": load,
        "requests": len(ids),
        "done": sum(final[k]["status"] == "done" for k in keys),
        "failed_at_deadline": len(at_deadline),
        "failed_at_deadline_waited_in_queue": sum(WAITED in e for e in at_deadline),
        "failed_lost": len(lost),
        "failed_other": [e for e in errors if e not in lost and e not in at_deadline],
        "dispatched_again_requests": sum(final[k]["attempts"] > 1 for k in keys),
        "dispatched_again_total": sum(final[k]["attempts"] - 1 for k in keys),
        "sweeper_lost_lines": said.count(" is lost (") + said.count(" looks lost ("),
        "sweeper_put_back_lines": said.count("put back in its queue"),
        "two_live_copies": len(watch.doubled),
        "two_live_copies_requests": watch.doubled,
        "broker_looks": watch.looks,
        "stage_ran_twice": repeated,
        "seconds": {
            "sent_to_kill": round(killed - sent, 1),
            "kill_to_restarted": round(restarted - killed, 1),
            "sent_to_last_end": round(finished - sent, 1),
        },
        "errors": dict(Counter(errors).most_common(8)),
    }


def report(r: dict[str, Any]) -> str:
    return "\n".join([
        f"Redis SIGKILLed under make run, {r['requests']} cold requests in flight, "
        f"{'a CPU hog on one core' if r['hog'] else 'no hog'}, {r['date']} ({r['root']}); "
        f"load average {r['load_average']}:",
        "",
        f"* done {r['done']}; failed at the deadline {r['failed_at_deadline']} "
        f"({r['failed_at_deadline_waited_in_queue']} saying it waited in the queue); "
        f"failed as lost {r['failed_lost']}; failed otherwise {len(r['failed_other'])}",
        f"* dispatched again: {r['dispatched_again_requests']} requests, "
        f"{r['dispatched_again_total']} times (sweeper: {r['sweeper_lost_lines']} lost, "
        f"{r['sweeper_put_back_lines']} delivered messages put back)",
        f"* pipelines seen as two live copies: {r['two_live_copies']} "
        f"({r['broker_looks']} looks at the broker); a stage ran twice in "
        f"{len(r['stage_ran_twice'])} requests",
    ])  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--no-hog", action="store_true", help="no busy loop on a core")
    parser.add_argument("--timeout", type=float, default=420, help="seconds for every end")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout whose stack runs")
    args = parser.parse_args(argv)
    measure = lambda sup, workdir: run(args, sup, workdir)  # noqa: E731
    return study("redis-kill-check", measure, report, keep=True)


if __name__ == "__main__":
    raise SystemExit(main())
