"""`make -C lab users-first`: the service's own background work must not delay a person.

    python -m lab.users_first [--quick] [--runs 3] [--horizons 12] [--settle 300]

Each run, its two configurations in alternating order, each on `make run` stacks of its
own (`lab.harness.Stack`: MARKET_CLOCK=live, the sample prices, so unchanged data). On:
the watchlist (PRECOMPUTE_*) and shadow generations (REGISTRY_SHADOW) as shipped; off:
`PRECOMPUTE_SYMBOLS=` and `REGISTRY_SHADOW=false`.

* The first question: a fresh stack is asked MSFT h=2 at once after /readyz (cold, beside
  the spare worker's warm-up and, on, the watchlist's first refresh); off's is the cold time.
* New horizons: a stack on a copy of the prepared database is asked one warm-up question
  (a restarted worker's first loads the models' states), then, once on's watchlist has
  pipelines in flight, MSFT at horizons 3, 4, ... (`use_cache: false`, POST then `?wait`)
  one after another. Then the background work is waited for (`--settle` s at most) and
  counted from the database: the shadows in the forecasts of record against those the
  answers asked for; the watchlist's questions its own pipelines answered.

The prepared database, made once from the first cold off stack: MSFT trained with
MODEL_SEED=0, the stack restarted with MODEL_SEED=1. The seed is in every model's recipe
(forecasting/recipes.py): a new recipe for every model, as a deploy of new model code is.
The next answer queues a shadow per model (registry/shadows.py), trained once, and
`manage.py generations MSFT` is read until every model has one pending. The timed stacks
run MODEL_SEED=1: on, every answer queues a shadow forecast per model; off, the newest
generations answer. Horizon 5 is the watchlist's too: on may find MSFT h=5 answered.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import shutil
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from devstack.postgres import ThrowawayPostgres
from devstack.supervisor import Supervisor
from lab import cpu
from lab.harness import REPORTS, Stack, header, predict, study
from lab.users_first_report import (
    judge,
    latency_summary,
    refresh_counts,
    report,
    shadow_counts,
    stage_summary,
)
from loadtests.deployment import wait_until
from loadtests.report import machine
from plumbing.packed_json import unpack

SYMBOL, FIRST_HORIZON, WARM_UP_HORIZON = "MSFT", 2, 20
OFF = {"PRECOMPUTE_SYMBOLS": "", "REGISTRY_SHADOW": "false"}
OFF_WORDS = " ".join(f"{key}={value}" for key, value in OFF.items())
TRAINED_SEED, NEW_SEED = "0", "1"
BACKGROUND = ("PRECOMPUTE_", "REGISTRY_SHADOW")


@dataclass
class Side(Stack):
    """A stack whose background settings are as shipped unless `extra` names them: the
    watchlist `Stack` turns off and any the caller's shell sets are dropped."""

    def env(self) -> dict[str, str]:
        env = super().env()
        for key in [k for k in env if k.startswith(BACKGROUND) and k not in self.extra]:
            del env[key]
        return env


class Databases:
    """Each stack's database: a file in its folder (SQLite, `make run`'s default) or, with
    `--database postgres`, a database of its own on one throwaway PostgreSQL server (the
    production database: no single writer's lock between the lanes). A copy of the prepared
    one where asked: its files, or `CREATE DATABASE ... TEMPLATE`."""

    def __init__(self, kind: str) -> None:
        self.pg = ThrowawayPostgres().start() if kind == "postgres" else None

    def place(self, var: Path, copy_of: str | None) -> dict[str, str]:
        """A database for the stack in `var`; the settings that name it."""
        if self.pg is None:
            if copy_of is not None:  # and its write-ahead log, should a process have left one
                for part in Path(copy_of).parent.glob(f"{Path(copy_of).name}*"):
                    if not part.name.endswith("-shm"):
                        shutil.copy2(part, var / part.name)
            return {}
        template = f' TEMPLATE "{copy_of}"' if copy_of else ""
        with psycopg.connect(self.pg.url_of("postgres"), autocommit=True) as con:
            con.execute(f'CREATE DATABASE "{var.name}"{template}'.encode())
        return {"DATABASE_URL": self.pg.url_of(var.name)}

    def name_of(self, stack: Stack) -> str:
        return str(stack.var_dir / "db.sqlite3") if self.pg is None else stack.var_dir.name

    def rows(self, stack: Stack, sql: str) -> list[tuple[Any, ...]]:
        if self.pg is not None:
            with psycopg.connect(self.pg.url_of(stack.var_dir.name)) as con:
                return con.execute(sql.encode()).fetchall()
        db = f"file:{self.name_of(stack)}?mode=ro"
        with contextlib.closing(sqlite3.connect(db, uri=True, timeout=30)) as con:
            return con.execute(sql).fetchall()

    def stop(self) -> None:
        if self.pg is not None:
            self.pg.stop()


def read_db(
    rows: Callable[[str], list[tuple[Any, ...]]], watched: list[tuple[str, int]]
) -> dict[str, Any]:
    """The counts, from the finished answers, the forecasts of record and the watchlist's
    pipelines."""
    answers = rows(
        "SELECT symbol, horizon, last_bar_date, result FROM predictions_predictionrequest"
        " WHERE status = 'done' AND result IS NOT NULL"
    )
    records = rows("SELECT symbol, horizon, as_of, members FROM predictions_forecastrecord")
    pipelines = rows(
        "SELECT symbol, horizon, status FROM predictions_predictionrequest WHERE precomputed"
    )
    made, expected = shadow_counts(
        [((s, h, str(day)), unpack(result)) for s, h, day, result in answers],
        {
            (s, h, str(day)): json.loads(m) if isinstance(m, str) else m  # PostgreSQL: parsed
            for s, h, day, m in records
        },
    )
    counts = {"shadows_made": made, "shadows_expected": expected}
    return {**counts, **refresh_counts(pipelines, watched)}


def cpu_by_lane(stack: Stack) -> dict[str, float]:
    """CPU seconds so far of the stack's spare worker (the background's lane) and of the
    rest (the web, the usual workers, Redis): whether a question's own processes spend
    more CPU beside background work, or wait longer for the same CPU."""
    assert stack.proc is not None
    every = cpu.descendants([stack.proc.pid])
    spare_roots = [pid for pid in every if ["-Q", "spare"] in _pairs(cpu.argv(pid))]
    spare = cpu.descendants(spare_roots)
    return {
        "spare": cpu.cpu_seconds(spare),
        "questions": cpu.cpu_seconds(every - spare),
        "questions waiting": cpu.run_queue_wait_seconds(every - spare),
    }


def _pairs(argv: list[str]) -> list[list[str]]:
    return [argv[i : i + 2] for i in range(len(argv) - 1)]


def pending(stack: Stack) -> dict[str, int]:
    """Models of SYMBOL in the registry, and those with a shadow generation pending."""
    models = json.loads(stack.manage("generations", SYMBOL))["models"]
    return {"models": len(models), "shadows": sum(m["shadow"] is not None for m in models)}


class UsersFirst:
    def __init__(
        self, args: argparse.Namespace, sup: Supervisor, workdir: Path, databases: Databases
    ) -> None:
        self.args, self.sup, self.workdir, self.databases = args, sup, workdir, databases
        self.logs = workdir / "logs"
        self.logs.mkdir()
        self.stacks = 0
        self.prepared: str | None = None

    def stack(self, side: str, seed: str, database: str | None = None) -> tuple[Side, str]:
        """A new stack's folder (with a copy of `database`), migrated, and a token of an
        identified client (a person: the usual lane); not started yet."""
        self.stacks += 1
        var = self.workdir / f"var_{self.stacks}_{side}"
        var.mkdir(mode=0o700)
        named = self.databases.place(var, database)
        settings = OFF if side == "off" else self.args.on_settings
        stack = Side(self.sup, var, self.logs, extra={"MODEL_SEED": seed, **named, **settings})
        stack.manage("migrate", "-v", "0")
        return stack, stack.manage("create_api_token", "users-first")

    def first_question(self, side: str) -> float:
        """A fresh stack's first question, asked as soon as it is ready: its ms."""
        stack, token = self.stack(side, TRAINED_SEED)
        stack.start()
        first_ms, _ = predict(stack.base, token, symbol=SYMBOL, horizon=FIRST_HORIZON,
                              use_cache=False)  # fmt: skip
        if self.prepared is None and side == "off":
            self.prepared = self.prepare(stack, token)
        stack.stop()
        return first_ms

    def prepare(self, stack: Side, token: str) -> str:
        """The trained stack restarted with a new recipe for every model until each has a
        shadow pending; its database."""
        stack.stop()
        stack.extra.update(MODEL_SEED=NEW_SEED, REGISTRY_SHADOW="true")
        stack.start()
        print("preparing: a shadow generation for every model…", flush=True)
        for _ in range(2):  # trained with shadows off, the first answer records what serves
            predict(stack.base, token, symbol=SYMBOL, horizon=FIRST_HORIZON, use_cache=False)

        def every() -> bool:
            found = pending(stack)
            return 0 < found["models"] == found["shadows"]

        wait_until(every, time.monotonic() + self.args.settle, "a shadow for every model", self.sup)
        stack.stop()
        return self.databases.name_of(stack)

    def timed(self, side: str) -> dict[str, Any]:
        """New horizons on unchanged data, then the background work waited for and counted."""
        assert self.prepared is not None
        stack, token = self.stack(side, NEW_SEED, self.prepared)
        ask = "import json; from market import watchlist; print(json.dumps(watchlist.questions()))"
        watched = [tuple(q) for q in json.loads(stack.manage("shell", "-c", ask).splitlines()[-1])]
        stack.start()
        db = functools.partial(self.databases.rows, stack)
        shadows = pending(stack)
        warm_up_ms, _ = predict(stack.base, token, symbol=SYMBOL, horizon=WARM_UP_HORIZON,
                                use_cache=False)  # fmt: skip
        if side == "on":
            with contextlib.suppress(TimeoutError):
                wait_until(lambda: read_db(db, watched)["refreshes_in_flight"] > 0,
                           time.monotonic() + 180, "the watchlist's refresh", self.sup)  # fmt: skip
        at_start = read_db(db, watched)["refreshes_in_flight"]
        cpu_before, busy_before, clock = (
            cpu_by_lane(stack),
            cpu.machine_busy_seconds(),
            time.monotonic(),
        )
        answered = [
            predict(stack.base, token, symbol=SYMBOL, horizon=h, use_cache=False)
            for h in self.args.horizon_list
        ]
        latencies = [ms for ms, _ in answered]
        cpu_after, busy_after = cpu_by_lane(stack), cpu.machine_busy_seconds()
        window = time.monotonic() - clock
        per_question = {
            lane: 1000 * (cpu_after[lane] - cpu_before[lane]) / len(answered) for lane in cpu_after
        }
        at_end = read_db(db, watched)["refreshes_in_flight"]
        load = machine()["load_average"]

        def settled() -> bool:
            now = read_db(db, watched)
            made = now["shadows_made"] == now["shadows_expected"]
            return made and now["refreshes_done"] == now["refreshes_asked"]

        with contextlib.suppress(TimeoutError):
            wait_until(settled, time.monotonic() + self.args.settle, "the background", self.sup)
        counts = read_db(db, watched)
        stack.stop()
        return {
            "latencies_ms": latencies,
            **latency_summary(latencies),
            "stages_ms": stage_summary(answered),
            "warm_up_ms": warm_up_ms,
            "cpu_ms_per_question": per_question,
            "cores_busy": (busy_after - busy_before) / window,
            "pending": shadows,
            "watchlist_in_flight": [at_start, at_end],
            "load_average": load,
            **counts,
        }

    def run(self, number: int) -> dict[str, Any]:
        order = ["off", "on"] if number % 2 == 0 else ["on", "off"]
        print(f"run {number + 1}: first questions ({' then '.join(order)})…", flush=True)
        first = {side: self.first_question(side) for side in order}
        print(f"run {number + 1}: new horizons ({' then '.join(order)})…", flush=True)
        sides = {side: {**self.timed(side), "first_ms": first[side]} for side in order}
        return {"order": order, **sides, "verdicts": judge(sides["on"], sides["off"])}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: one run, 4 horizons")
    parser.add_argument("--runs", type=int, default=3, help="runs, alternating the order")
    parser.add_argument("--horizons", type=int, default=12, help="new horizons from 3 on")
    parser.add_argument("--settle", type=float, default=300, help="s to wait for background")
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite",
                        help="the stacks' database: make run's SQLite, or PostgreSQL")  # fmt: skip
    parser.add_argument("--keep", action="store_true", help="keep the work folder (logs)")
    parser.add_argument(
        "--on", default="", metavar="KEY=VALUE ...",
        help="settings for on's stacks (e.g. REGISTRY_SHADOW=false: the watchlist's share)",
    )  # fmt: skip
    parser.add_argument("--reports", type=Path, default=REPORTS)
    args = parser.parse_args(argv)
    if args.quick:
        args.runs, args.horizons, args.settle = 1, 4, 180
    args.horizon_list = list(range(3, 3 + args.horizons))
    args.on_settings = dict(word.split("=", 1) for word in args.on.split())
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    def measure(sup: Supervisor, workdir: Path) -> dict[str, Any]:
        databases = Databases(args.database)
        try:
            lab = UsersFirst(args, sup, workdir, databases)
            results = {**header("lab.users_first"), "symbol": SYMBOL, "off": OFF_WORDS}
            results["database"] = args.database
            results["on"] = args.on or "as shipped"
            results["horizons"] = args.horizon_list
            results["runs"] = [lab.run(i) for i in range(args.runs)]
        finally:
            databases.stop()
        return {**results, "machine_after": machine()}

    return study("users-first", measure, report, args.reports, keep=args.keep)


if __name__ == "__main__":
    raise SystemExit(main())
