"""How many requests this process holds open with `?wait=` at once, and for whom.

Each waiting request holds a web thread (gunicorn has a handful per process); without a
bound, a few clients waiting 60 s each held every thread and the process answered nobody.
Beyond PREDICTION_MAX_WAITERS a wait is refused with 503 and Retry-After, and clients
follow the prediction's websocket or poll without waiting. One client may hold at most
half of them (at least one), so a single client cannot take every slot and turn everyone
else's `?wait` (and every cold TF Serving call) into a 503.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings

_lock = threading.Lock()
_waiting: Counter[str] = Counter()


def client_share() -> int:
    return max(1, settings.PREDICTION_MAX_WAITERS // 2)


@contextmanager
def wait_slot(client: str) -> Iterator[bool]:
    """Yields whether a slot was free for this client (and holds it until the block ends)."""
    with _lock:
        free = (
            sum(_waiting.values()) < settings.PREDICTION_MAX_WAITERS
            and _waiting[client] < client_share()
        )
        if free:
            _waiting[client] += 1
    try:
        yield free
    finally:
        if free:
            with _lock:
                _waiting[client] -= 1
                if not _waiting[client]:
                    del _waiting[client]


def held() -> int:
    """Slots held now in this process (tests wait on it instead of sleeping)."""
    with _lock:
        return sum(_waiting.values())
