"""`make -C lab replay`: a year of the offline market, fast-forwarded through the real stack.

    python -m lab.market_replay [--start YYYY-MM-DD --days 250 --models naive,ridge,arima]

By default it starts on the first trading day after the last one the adopted evaluation
saw of the watched symbols (`calibration.seen_until`), so what it measures is out of
sample for every choice the evaluation made.

It starts the whole stack as `make run` does (its own Redis and database in a temporary
VAR_DIR) on a paused market-clock replay, follows each watched symbol's websocket, and
steps the clock one trading day at a time through the API, as an operator would. After
each step it waits until the watchlist's refreshed forecast for every (symbol, horizon)
has been announced on the websocket (or a timeout), then steps again: the replay goes as
fast as the stack answers, and every day gets its forecasts. At the end it reads the
forecasts of record and their scores from the database and writes
lab/reports/replay-<timestamp>/report.md and results.json:

* forecasts recorded and scored, and whether each was scored exactly once per step and
  model (score rows against the rows a matured forecast must have);
* live coverage of the 80 % band per symbol and horizon, with n, beside what
  `make evaluate` measured (the served calibration file), counting only steps after the
  last day the evaluation saw of that symbol;
* new bar -> refreshed forecast on a subscribed page: p50 / p95 seconds;
* what model health and the registry did during the replay (with `--fault`, the injected
  fault's demotion). The decisions' error rates on years of real daily errors are
  `make -C lab decisions`'s.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import subprocess
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import requests
from websockets.sync.client import connect
from websockets.typing import Origin

from devstack.redis import EmbeddedRedis, free_port
from devstack.supervisor import Supervisor
from forecasting.calibration import load_calibration, seen_until_all
from lab.harness import Stack, report_dir
from launch import process_catalog
from loadtests.latencies import percentile
from loadtests.report import save

ROOT = process_catalog.ROOT
CALIBRATION = ROOT / "forecasting" / "calibration.json"


class Followers:
    """One websocket per symbol; the arrival time of each bar and forecast event."""

    def __init__(self, ws_base: str, origin: str, symbols: list[str]) -> None:
        self.origin = origin  # the pages' origin: the websocket server checks it
        self.bars: dict[tuple[str, str], float] = {}
        self.forecasts: dict[tuple[str, int, str], float] = {}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.errors: list[str] = []
        urls = [f"{ws_base}/ws/symbols/{s}/" for s in symbols]
        opened = [threading.Event() for _ in urls]
        self.threads = [
            threading.Thread(target=self._follow, args=(url, done), daemon=True)
            for url, done in zip(urls, opened, strict=True)
        ]
        for thread in self.threads:
            thread.start()
        for done in opened:
            done.wait(timeout=30)
        if self.errors or not all(done.is_set() for done in opened):
            self.close()
            raise RuntimeError(
                "Could not follow the symbols' websockets: "
                + ("; ".join(self.errors) or "no answer within 30 s")
            )

    def _follow(self, url: str, opened: threading.Event) -> None:
        try:
            with connect(url, open_timeout=10, origin=Origin(self.origin)) as socket:
                socket.recv(timeout=10)  # hello
                opened.set()
                self._listen(socket)
        except Exception as exc:  # refused, or no hello: the replay cannot measure
            if not opened.is_set():
                self.errors.append(f"{url}: {exc}")
                opened.set()

    def _listen(self, socket: Any) -> None:
        while not self.stop.is_set():
            try:
                message = json.loads(socket.recv(timeout=0.5))
            except TimeoutError:
                continue
            now = time.monotonic()
            event = message.get("event", {})
            with self.lock:
                if event.get("kind") == "bar":
                    self.bars[(event["symbol"], event["date"])] = now
                elif event.get("kind") == "forecast":
                    key = (event["symbol"], int(event["horizon"]), event["as_of"])
                    self.forecasts.setdefault(key, now)

    def barred(self, symbols: list[str], day: str, wait: float) -> list[str]:
        """The symbols whose bar for `day` was announced (waiting up to `wait` s for all)."""
        deadline = time.monotonic() + wait
        while True:
            with self.lock:
                seen = [s for s in symbols if (s, day) in self.bars]
            if len(seen) == len(symbols) or time.monotonic() >= deadline:
                return seen
            time.sleep(0.02)

    def have(self, keys: list[tuple[str, int, str]]) -> bool:
        with self.lock:
            return all(key in self.forecasts for key in keys)

    def close(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=5)


def start_stack(args: argparse.Namespace, sup: Supervisor, var_dir: Path, redis_url: str) -> Stack:
    settings = {
        # Its own SQLite file, whatever the shell says: the report reads it directly.
        "DATABASE_URL": f"sqlite:///{var_dir / 'db.sqlite3'}",
        "REDIS_URL": redis_url,
        "WS_PORT": str(free_port()),
        "MARKET_CLOCK": "replay",
        "REPLAY_START": args.start,
        "REPLAY_AUTOSTART": "0",
        "PREDICTION_MODELS": args.models,
        "PRECOMPUTE_SYMBOLS": args.symbols,
        "PRECOMPUTE_HORIZONS": args.horizons,
        "PRECOMPUTE_MAX_IN_FLIGHT": str(
            len(args.symbols.split(",")) * len(args.horizons.split(","))
        ),
        "PRECOMPUTE_CHECK_SECONDS": "2",
        "PRECOMPUTE_EVERY": "86400",
        "FAULT_INJECTION": args.fault,
    }
    stack = Stack(sup, var_dir, var_dir, extra=settings)
    stack.start(timeout_s=300)
    return stack


def staff_token(env: dict[str, str]) -> str:
    argv = process_catalog.api_token("replay", staff=True).argv()
    return subprocess.run(
        argv, cwd=ROOT, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()


def replay(args: argparse.Namespace) -> dict[str, Any]:
    symbols = [s.strip().upper() for s in args.symbols.split(",") if s.strip()]
    horizons = [int(h) for h in args.horizons.split(",")]
    var_dir = Path(tempfile.mkdtemp(prefix="replay-"))
    redis = EmbeddedRedis().start()
    sup = Supervisor(restart=False)
    followers = None
    try:
        stack = start_stack(args, sup, var_dir, redis.url)
        base, ws_port = stack.base, stack.extra["WS_PORT"]
        session = requests.Session()
        session.headers["Authorization"] = f"Token {staff_token(stack.env())}"
        # A clock step is not idempotent, so it never rides a kept-alive connection the
        # server may close under it (gunicorn's keep-alive is 2 s): each request its own.
        session.headers["Connection"] = "close"
        followers = Followers(f"ws://127.0.0.1:{ws_port}", base, symbols)
        clock = session.get(f"{base}/api/v1/clock/", timeout=10).json()
        started = time.monotonic()
        missed: list[str] = []
        holidays: list[str] = []
        for _ in range(args.days):
            response = session.post(f"{base}/api/v1/clock/", json={"action": "step"}, timeout=60)
            response.raise_for_status()
            clock = response.json()
            # A weekday without a bar (an exchange holiday) brings no new forecast: wait
            # only for the symbols whose bar for the day was announced.
            barred = followers.barred(symbols, clock["date"], wait=2.0)
            if not barred:
                holidays.append(clock["date"])
                continue
            wanted = [(s, h, clock["date"]) for s in barred for h in horizons]
            deadline = time.monotonic() + args.day_timeout
            while not followers.have(wanted) and time.monotonic() < deadline:
                time.sleep(0.05)
            if not followers.have(wanted):
                missed.append(clock["date"])
        for _ in range(max(horizons) + 2):  # the last forecasts' steps get their bars
            session.post(f"{base}/api/v1/clock/", json={"action": "step"}, timeout=60)
        wall = time.monotonic() - started
        settled = wait_for_scores(var_dir / "db.sqlite3", timeout=120)
        outcome = Outcome(missed, holidays, wall, settled)
        return report(var_dir / "db.sqlite3", followers, symbols, horizons, outcome, args)
    finally:
        if followers is not None:
            followers.close()
        sup.stop(grace_s=60)  # the launcher stops its children
        redis.stop()
        if args.keep:
            print(f"the replay's database and logs are kept in {var_dir}")
        else:
            shutil.rmtree(var_dir, ignore_errors=True)


def query(db: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
        return conn.execute(sql, params).fetchall()


def wait_for_scores(db: Path, timeout: float) -> bool:
    """Until no forecast that the data can mature is left unscored (True), or the timeout."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        counts = query(db, "SELECT COUNT(*), SUM(scored_steps) FROM predictions_forecastrecord")
        if counts == last:
            return True
        last = counts
        time.sleep(3)
    return False


@dataclass(frozen=True)
class Outcome:
    missed: list[str]  # days whose forecasts did not all arrive within --day-timeout
    holidays: list[str]  # weekdays that brought no bar
    wall: float
    settled: bool


def report(
    db: Path,
    followers: Followers,
    symbols: list[str],
    horizons: list[int],
    outcome: Outcome,
    args: argparse.Namespace,
) -> dict[str, Any]:
    records = query(
        db,
        "SELECT id, symbol, horizon, as_of, scored_steps, members FROM predictions_forecastrecord",
    )
    scores = query(
        db,
        "SELECT record_id, model, step, covered, date FROM predictions_forecastscore",
    )
    by_record: dict[int, list[tuple[str, int, Any, str]]] = defaultdict(list)
    for record_id, model, step, covered, day in scores:
        by_record[record_id].append((model, step, covered, day))
    expected = sum(r[4] * (1 + len(json.loads(r[5]))) for r in records)
    distinct = len({(r, m, s) for r, rows in by_record.items() for m, s, _, _ in rows})
    coverage: dict[str, dict[str, Any]] = {}
    calibration = load_calibration(CALIBRATION)
    seen = seen_until_all()
    for symbol in symbols:
        after = seen[symbol].isoformat() if symbol in seen else None
        for horizon in horizons:
            ids = [r[0] for r in records if r[1] == symbol and r[2] == horizon]
            steps = [(c, day) for i in ids for m, _s, c, day in by_record[i]
                     if m == "ensemble" and c is not None]  # fmt: skip
            covered = [c for c, day in steps if after is not None and day > after]
            measured = (calibration.band_coverage(symbol, horizon) or {}).get("coverage")
            coverage[f"{symbol} h={horizon}"] = {
                "forecasts": len(ids),
                "evaluation_saw_until": after,
                "n_all": len(steps),
                "n": len(covered),
                "coverage": sum(covered) / len(covered) if covered else None,
                "evaluate": measured,
            }
    latencies = [
        followers.forecasts[key] - followers.bars[(key[0], key[2])]
        for key in followers.forecasts
        if (key[0], key[2]) in followers.bars
    ]
    days = args.days
    return {
        "start": args.start,
        "days": days,
        "wall_seconds": round(outcome.wall, 1),
        "days_missing_a_forecast": outcome.missed,
        "days_without_a_bar": outcome.holidays,
        "forecasts_recorded": len(records),
        "forecasts_matured": sum(1 for r in records if r[4] >= r[2]),
        "score_rows": len(scores),
        "score_rows_expected": expected,
        "score_rows_distinct": distinct,
        "scored_exactly_once": len(scores) == distinct == expected,
        "scores_settled": outcome.settled,
        "coverage": coverage,
        "bar_to_forecast_seconds": {
            "n": len(latencies),
            "p50": percentile(latencies, 50),
            "p95": percentile(latencies, 95),
        },
        "models": args.models,
        "fault": args.fault or None,
        "demoted": query(
            db,
            "SELECT symbol, model, since, reason FROM predictions_modelhealth "
            "WHERE state = 'demoted'",
        ),
        "generation_events": dict(
            query(db, "SELECT action, COUNT(*) FROM predictions_generationevent GROUP BY action")
        ),
        "promotions": query(
            db,
            "SELECT symbol, model, generation, reason FROM predictions_generationevent "
            "WHERE action = 'promoted' AND replaced IS NOT NULL ORDER BY created_at",
        ),
        "judged": query(
            db,
            "SELECT symbol, model, generation, action, reason FROM predictions_generationevent "
            "WHERE action IN ('shadow', 'rejected') OR (action = 'promoted' AND reason LIKE "
            "'shadow better%') ORDER BY created_at",
        ),
    }


def default_start(symbols: list[str]) -> date:
    """The first weekday after the last day the adopted evaluation saw of any of them."""
    seen = seen_until_all()
    known = [seen[s.strip().upper()] for s in symbols if s.strip().upper() in seen]
    if not known:
        raise SystemExit("the adopted evaluation saw none of these symbols: pass --start")
    day = max(known) + timedelta(days=1)
    while day.weekday() >= 5:
        day += timedelta(days=1)
    return day


def write(results: dict[str, Any]) -> Path:
    lines = [
        "# Replay: forecasts of record through the real stack",
        "",
        f"{results['days']} trading days from {results['start']}, models {results['models']}, "
        f"{results['wall_seconds']} s of wall time.",
        "",
        f"- forecasts recorded: {results['forecasts_recorded']}, matured: "
        f"{results['forecasts_matured']}",
        f"- score rows: {results['score_rows']} (expected {results['score_rows_expected']}, "
        f"distinct {results['score_rows_distinct']}): scored exactly once = "
        f"{results['scored_exactly_once']}",
        f"- days whose forecasts did not all arrive in time: "
        f"{len(results['days_missing_a_forecast'])}; weekdays without a bar (holidays): "
        f"{len(results['days_without_a_bar'])}",
        f"- new bar -> refreshed forecast on a subscribed page: p50 "
        f"{_s(results['bar_to_forecast_seconds']['p50'])}, p95 "
        f"{_s(results['bar_to_forecast_seconds']['p95'])} "
        f"(n = {results['bar_to_forecast_seconds']['n']})",
        "",
        "Live coverage counts only the steps after the last day `make evaluate` saw of the "
        "symbol (its adopted tables say which), so the two columns share no data.",
        "",
        "| question | forecasts | evaluation saw until | scored steps after it (of all) "
        "| live coverage of the 80 % band | make evaluate |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name, row in results["coverage"].items():
        live = "–" if row["coverage"] is None else f"{100 * row['coverage']:.1f} %"
        evaluated = "–" if row["evaluate"] is None else f"{100 * row['evaluate']:.1f} %"
        lines.append(
            f"| {name} | {row['forecasts']} | {row['evaluation_saw_until'] or 'not evaluated'} "
            f"| {row['n']} ({row['n_all']}) | {live} | {evaluated} |"
        )
    events = results["generation_events"]
    refits = sum(1 for *_, why in results["promotions"] if why.startswith("refit"))
    lines += [
        "",
        "## Model health and generations in this replay",
        "",
        f"- injected fault: {results['fault'] or 'none'}; demoted by the running service: "
        f"{results['demoted'] or 'none'}",
        f"- generation events: {events or 'none'}",
        f"- refits of the serving recipe, served at once: {refits}",
        f"- judged in shadow (a new recipe): {len(results['judged'])} events"
        + ("" if results["judged"] else " (no model's code or settings changed during it)"),
        *(f"  - {s} {m} generation {g} {a}: {why}" for s, m, g, a, why in results["judged"][:10]),
        "",
        "The decisions' error rates on years of the models' real daily errors: "
        "`make -C lab decisions`.",
    ]
    out = report_dir("replay")
    save(out, "\n".join(lines) + "\n", results)
    return out


def _s(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--start",
        default="",
        help="the replay's first day (default: the first after what the evaluation saw)",
    )
    parser.add_argument("--days", type=int, default=250, help="trading days to replay")
    parser.add_argument("--symbols", default="AAPL,MSFT,GOOG")
    parser.add_argument("--horizons", default="1,5,20")
    parser.add_argument("--models", default="naive,ridge,arima")
    parser.add_argument("--day-timeout", type=float, default=30.0, help="seconds per day at most")
    parser.add_argument("--keep", action="store_true", help="keep the replay's VAR_DIR")
    parser.add_argument(
        "--fault", default="", help="inject a fault, model:bias:date (e.g. ridge:0.03:2012-09-04)"
    )
    args = parser.parse_args()
    args.start = args.start or default_start(args.symbols.split(",")).isoformat()
    results = replay(args)
    out = write(results)
    print((out / "report.md").read_text())
    print(f"written to {out}")


if __name__ == "__main__":
    main()
