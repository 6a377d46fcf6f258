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


def submitted(code: int, answer: dict[str, Any]) -> Outcome | str:
    """The POST's answer: final (answered at once, or refused), or the id to follow."""
    if code == 200:
        status = str(answer.get("status", ""))
        return Outcome(
            status == "done", status, str(answer.get("id", "")), bool(answer.get("cache_hit"))
        )
    if code != 202:
        return Outcome(False, f"http {code}", error=str(answer)[:300])
    return str(answer["id"])


def poll(prediction_id: str, deadline: float) -> tuple[str, int]:
    """The next long poll: its path and how long the server may hold it (1-30 s)."""
    wait = max(1, min(30, int(deadline - time.monotonic())))
    return f"{PREDICTIONS}{prediction_id}/?wait={wait}", wait


def polled(
    code: int, answer: dict[str, Any], prediction_id: str, deadline: float, max_wait_s: float
) -> Outcome | None:
    """A poll's answer: the final outcome, or None to poll again."""
    status = str(answer.get("status", f"http {code}"))
    if status == "done":
        return Outcome(True, status, prediction_id)
    if status == "failed" or code != 200:
        return Outcome(False, status, prediction_id, error=str(answer.get("error", answer)))
    if time.monotonic() >= deadline:
        return Outcome(False, "timeout", prediction_id, error=f"not final after {max_wait_s:.0f} s")
    return None


def submit_and_wait(call: Call, body: dict[str, Any], max_wait_s: float) -> Outcome:
    """POST, then long-poll `?wait=` until the prediction is done or failed (Locust's users;
    the engine's `prediction` job follows the same steps without blocking)."""
    first = submitted(*call("POST", PREDICTIONS, body, PREDICTIONS))
    if isinstance(first, Outcome):
        return first
    deadline = time.monotonic() + max_wait_s
    while True:
        path, _ = poll(first, deadline)
        answer = call("GET", path, None, f"{PREDICTIONS}[id]/?wait")
        if (final := polled(*answer, first, deadline, max_wait_s)) is not None:
            return final
