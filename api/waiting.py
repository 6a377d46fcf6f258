"""How many requests this process holds open with `?wait=` at once.

Each waiting request holds a web thread (gunicorn has a handful per process); without a
bound, a few clients waiting 60 s each held every thread and the process answered nobody.
Beyond PREDICTION_MAX_WAITERS a wait is refused with 503 and Retry-After, and clients
follow the prediction's websocket or poll without waiting.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings

_lock = threading.Lock()
_waiting = 0


@contextmanager
def wait_slot() -> Iterator[bool]:
    """Yields whether a slot was free (and holds it until the block ends)."""
    global _waiting
    with _lock:
        free = _waiting < settings.PREDICTION_MAX_WAITERS
        if free:
            _waiting += 1
    try:
        yield free
    finally:
        if free:
            with _lock:
                _waiting -= 1
