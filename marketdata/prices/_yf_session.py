"""A curl_cffi session that bounds every HTTP request yfinance makes.

``Ticker.history(timeout=...)`` only applies to the chart request itself:
yfinance 1.7 also fetches the exchange time zone with a fixed 10 s timeout and
its cookie/crumb with 30 s. Handing yfinance this session (its supported
``session=`` argument) caps each of those requests at our per-request timeout
and all of them together at a per-fetch budget, so a dead network costs
seconds, not minutes. Imported lazily: curl_cffi is only needed for Yahoo.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from curl_cffi import requests as curl_requests


@dataclass(frozen=True)
class _Budget:
    per_request: float
    deadline: float  # time.monotonic()
    total: float


_BUDGET: contextvars.ContextVar[_Budget | None] = contextvars.ContextVar(
    "yfinance_budget", default=None
)


class BudgetSession(curl_requests.Session):
    """Caps ``timeout`` to the active budget; outside a budget it behaves as usual."""

    def request(self, method: Any, url: str, *args: Any, **kwargs: Any) -> Any:
        budget = _BUDGET.get()
        if budget is not None:
            remaining = budget.deadline - time.monotonic()
            if remaining <= 0:
                raise curl_requests.exceptions.Timeout(
                    f"gave up before {url.split('?')[0]}: the {budget.total:g} s budget "
                    "for this fetch is spent"
                )
            asked = kwargs.get("timeout")
            cap = min(budget.per_request, remaining)
            kwargs["timeout"] = cap if not isinstance(asked, int | float) else min(asked, cap)
        return super().request(method, url, *args, **kwargs)


@contextlib.contextmanager
def budget(per_request: float, total: float) -> Iterator[None]:
    """Within this block, requests through ``BudgetSession`` share ``total`` seconds."""
    token = _BUDGET.set(_Budget(per_request, time.monotonic() + total, total))
    try:
        yield
    finally:
        _BUDGET.reset(token)


_lock = threading.Lock()
_session: BudgetSession | None = None
_session_pid: int | None = None


def shared_session() -> BudgetSession:
    """One session per process (yfinance keeps one anyway); rebuilt after a fork."""
    global _session, _session_pid
    with _lock:
        if _session is None or _session_pid != os.getpid():
            _session = BudgetSession(impersonate="chrome")
            _session_pid = os.getpid()
        return _session
