"""What the load generators send: the symbol mix, the request body, and submit-then-wait.

Shared by the Locust users and the open-loop engine (`loadtests.engine`), so both measure
the same thing.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

PREDICTIONS = "/api/v1/predictions/"
DEFAULT_SYMBOLS = "AAPL,MSFT,IBM,GOOG"
# An HTTP call: (method, path, json body or None, stats name) -> (status code, JSON body).
Call = Callable[[str, str, dict[str, Any] | None, str], tuple[int, dict[str, Any]]]


def parse_mix(text: str) -> tuple[tuple[str, float], ...]:
    """`AAPL:5,MSFT:1,IBM` -> ((AAPL, 5), (MSFT, 1), (IBM, 1)); weights default to 1."""
    mix = []
    for item in text.split(","):
        if not item.strip():
            continue
        symbol, _, weight = item.strip().partition(":")
        try:
            value = float(weight) if weight else 1.0
        except ValueError as exc:
            raise ValueError(f"bad weight in symbol mix item {item!r}") from exc
        if value <= 0:
            raise ValueError(f"weights must be positive, got {item!r}")
        mix.append((symbol.upper(), value))
    if not mix:
        raise ValueError("the symbol mix is empty")
    return tuple(mix)


def parse_range(text: str) -> tuple[float, float]:
    """Think time `MIN,MAX` (or one number) in seconds."""
    parts = [float(p) for p in text.split(",") if p.strip()]
    if not parts or len(parts) > 2 or min(parts) < 0:
        raise ValueError(f"think time must be 'MIN,MAX' seconds, got {text!r}")
    return (parts[0], parts[-1])


@dataclass(frozen=True)
class Workload:
    symbols: tuple[tuple[str, float], ...] = field(
        default_factory=lambda: parse_mix(DEFAULT_SYMBOLS)
    )
    horizon: int = 5
    strategy: str | None = None  # None: the server's DEFAULT_STRATEGY
    cold: bool = True  # skip the result cache and the model registry's warm start
    max_wait_s: float = 120.0
    warm_models: bool = False  # with `cold`: skip the result cache only (a fresh pipeline)

    def pick(self, rng: random.Random) -> str:
        names = [s for s, _ in self.symbols]
        return rng.choices(names, weights=[w for _, w in self.symbols])[0]

    def body(self, symbol: str) -> dict[str, Any]:
        body: dict[str, Any] = {"symbol": symbol, "horizon": self.horizon}
        if self.strategy:
            body["strategy"] = self.strategy
        if self.cold:
            body.update(use_cache=False, warm_start=self.warm_models)
        return body


@dataclass
class Outcome:
    ok: bool
    status: str
    prediction_id: str = ""
    cache_hit: bool = False
    error: str = ""


def submit_and_wait(call: Call, body: dict[str, Any], max_wait_s: float) -> Outcome:
    """POST, then long-poll `?wait=` until the prediction is done or failed."""
    code, answer = call("POST", PREDICTIONS, body, PREDICTIONS)
    if code == 200:
        return Outcome(
            answer.get("status") == "done",
            answer.get("status", ""),
            str(answer.get("id", "")),
            bool(answer.get("cache_hit")),
        )
    if code != 202:
        return Outcome(False, f"http {code}", error=str(answer)[:300])
    prediction_id = str(answer["id"])
    deadline = time.monotonic() + max_wait_s
    while True:
        wait = max(1, min(30, int(deadline - time.monotonic())))
        code, answer = call(
            "GET", f"{PREDICTIONS}{prediction_id}/?wait={wait}", None, f"{PREDICTIONS}[id]/?wait"
        )
        status = answer.get("status", f"http {code}")
        if status == "done":
            return Outcome(True, status, prediction_id)
        if status == "failed" or code != 200:
            return Outcome(False, status, prediction_id, error=str(answer.get("error", answer)))
        if time.monotonic() >= deadline:
            return Outcome(
                False, "timeout", prediction_id, error=f"not final after {max_wait_s:.0f} s"
            )
