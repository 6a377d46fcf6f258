"""Locust users for the prediction service.

    locust -f loadtests/locustfile.py --headless -u 10 -r 10 -t 60s \
        --host http://127.0.0.1:8000 --csv out/locust --raw-csv out/raw.csv

* `WebUser`: a person on the page: submits a prediction, waits for it, thinks, repeats.
* `ApiClient`: a program that mostly asks for the same few symbols, so mostly cache hits.

The end-to-end latency of a prediction (submit -> done, several HTTP calls) is reported as
its own request type, `PREDICT` (docs/architecture.md, rule 16); every request is also
written raw to `--raw-csv` so exact percentiles come from the samples, not from Locust's
rounded buckets.
These are closed-loop users: a slow server slows them down. Judge latency under load with
the open-loop runner (`python -m loadtests.openloop`).
"""

from __future__ import annotations

import itertools
import random
import time
from typing import Any

from gevent import GreenletExit
from locust import HttpUser, events, task

from loadtests.rawlog import RawLog, Row
from loadtests.workload import Outcome, Workload, parse_mix, parse_range, submit_and_wait

_raw: RawLog | None = None
_user_numbers = itertools.count()


@events.init_command_line_parser.add_listener
def add_arguments(parser: Any) -> None:
    group = parser.add_argument_group("stockserve")
    group.add_argument(
        "--symbols",
        default="AAPL,MSFT,IBM,GOOG",
        env_var="LOADTEST_SYMBOLS",
        help="web users' symbol mix, e.g. AAPL:5,MSFT:1",
    )
    group.add_argument(
        "--api-symbols",
        default="AAPL:8,MSFT:1,IBM:1",
        env_var="LOADTEST_API_SYMBOLS",
        help="API clients' symbol mix",
    )
    group.add_argument(
        "--think",
        default="1,3",
        env_var="LOADTEST_THINK",
        help="think time MIN,MAX seconds between predictions",
    )
    group.add_argument(
        "--strategy",
        default="",
        env_var="LOADTEST_STRATEGY",
        help="centralized, chord or cascade (default: the server's)",
    )
    group.add_argument("--horizon", type=int, default=5, env_var="LOADTEST_HORIZON")
    group.add_argument(
        "--seed",
        type=int,
        default=0,
        env_var="LOADTEST_SEED",
        help="seed of the users' symbol choices (user i uses seed + i)",
    )
    group.add_argument(
        "--cold",
        action="store_true",
        env_var="LOADTEST_COLD",
        help="web users skip the result cache and the models' warm start",
    )
    group.add_argument(
        "--max-wait",
        type=float,
        default=120,
        env_var="LOADTEST_MAX_WAIT",
        help="seconds a user waits for one prediction",
    )
    group.add_argument(
        "--raw-csv",
        default="",
        env_var="LOADTEST_RAW_CSV",
        help="write every request's latency to this CSV",
    )


@events.init.add_listener
def open_raw_log(environment: Any, **kwargs: Any) -> None:
    global _raw
    path = getattr(environment.parsed_options, "raw_csv", "")
    if path:
        _raw = RawLog(path)


@events.request.add_listener
def record(
    request_type: str,
    name: str,
    response_time: float,
    exception: Any,
    context: dict[str, Any] | None = None,
    start_time: float | None = None,
    **kwargs: Any,
) -> None:
    if _raw is None:
        return
    context = context or {}
    _raw.write(
        Row(
            kind="prediction" if request_type == "PREDICT" else "http",
            name=name if request_type == "PREDICT" else f"{request_type} {name}",
            started_at=start_time or time.time() - response_time / 1000,
            latency_ms=response_time,
            ok=exception is None,
            status=str(context.get("status", "")),
            prediction_id=str(context.get("prediction_id", "")),
            cache_hit=bool(context.get("cache_hit", False)),
            error=str(exception or ""),
        )
    )


@events.quitting.add_listener
def close_raw_log(**kwargs: Any) -> None:
    if _raw is not None:
        _raw.close()


class _PredictingUser(HttpUser):
    abstract = True
    symbols_option = "symbols"
    cold = False

    def on_start(self) -> None:
        options = self.environment.parsed_options
        # Seeded per user, so every strategy of an experiment gets the same symbol sequence:
        # the cost of a model depends on the symbol's history length.
        self.rng = random.Random(options.seed + next(_user_numbers))
        self.think = parse_range(options.think)
        self.workload = Workload(
            symbols=parse_mix(getattr(options, self.symbols_option)),
            horizon=options.horizon,
            strategy=options.strategy or None,
            cold=self.cold and options.cold,
            max_wait_s=options.max_wait,
        )

    def wait_time(self) -> float:
        return self.rng.uniform(*self.think)

    def _call(
        self, method: str, path: str, body: dict[str, Any] | None, name: str
    ) -> tuple[int, dict[str, Any]]:
        with self.client.request(
            method, path, json=body, name=name, catch_response=True
        ) as response:
            try:
                payload = response.json()
            except ValueError:
                payload = {"error": response.text[:200]}
            if response.status_code in (200, 202):
                response.success()
            else:
                response.failure(f"HTTP {response.status_code}: {str(payload)[:200]}")
            return response.status_code, payload

    def predict(self) -> None:
        symbol = self.workload.pick(self.rng)
        started = time.time()
        clock = time.perf_counter()
        try:
            outcome = submit_and_wait(
                self._call, self.workload.body(symbol), self.workload.max_wait_s
            )
        except GreenletExit:  # the run ended first: an error, not a silently lost sample
            outcome = Outcome(False, "unfinished", error="the run ended before the answer")
            self._report(started, clock, outcome)
            raise
        self._report(started, clock, outcome)

    def _report(self, started: float, clock: float, outcome: Outcome) -> None:
        """The end-to-end latency of one prediction, as its own request type."""
        self.environment.events.request.fire(
            request_type="PREDICT",
            name=self.workload.strategy or "default",
            response_time=(time.perf_counter() - clock) * 1000,
            response_length=0,
            exception=None if outcome.ok else RuntimeError(f"{outcome.status}: {outcome.error}"),
            context={
                "prediction_id": outcome.prediction_id,
                "cache_hit": outcome.cache_hit,
                "status": outcome.status,
            },
            start_time=started,
        )


class WebUser(_PredictingUser):
    """Submits a prediction, waits for the chart, thinks, and does it again."""

    weight = 1
    cold = True  # honours --cold

    @task
    def predict_and_wait(self) -> None:
        self.predict()


class ApiClient(_PredictingUser):
    """A program polling a few favourite symbols: mostly answered from the cache."""

    weight = 1
    symbols_option = "api_symbols"

    @task(10)
    def predict_cached(self) -> None:
        self.predict()

    @task(1)
    def list_recent(self) -> None:
        self._call("GET", "/api/v1/predictions/?page=1", None, "/api/v1/predictions/?page")
