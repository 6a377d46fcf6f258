"""Locust users for the prediction service.

    locust -f loadtests/locustfile.py --host http://127.0.0.1:8000   # its web UI on :8089

* `WebUser`: a person on the page: submits a prediction, waits for it, thinks, repeats.
* `ApiClient`: a program that mostly asks for the same few symbols, so mostly cache hits.

The end-to-end latency of a prediction (submit -> done, several HTTP calls) is reported as
its own request type, `PREDICT` (docs/architecture.md, rule 16).
Locust is here for its interactive UI. These are closed-loop users: a slow server slows
them down, and Locust's percentiles come from rounded buckets. Every measured figure comes
from the open-loop engine (`loadtests.engine`), with exact percentiles from raw samples.
"""

from __future__ import annotations

import itertools
import random
import time
from typing import Any

from gevent import GreenletExit
from locust import HttpUser, events, task

from loadtests.workload import Outcome, Workload, parse_mix, parse_range, submit_and_wait

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


class _PredictingUser(HttpUser):
    abstract = True
    symbols_option = "symbols"
    cold = False

    def on_start(self) -> None:
        options = self.environment.parsed_options
        # Seeded per user, so two runs send the same symbol sequence: the cost of a model
        # depends on the symbol's history length.
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
