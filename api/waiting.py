"""How many requests this process holds open with `?wait=` at once, and for whom.

Each waiting request holds a web thread (gunicorn has a handful per process); without a
bound, a few clients waiting 60 s each held every thread and the process answered nobody.
Beyond PREDICTION_MAX_WAITERS a wait is refused with 503 and Retry-After, and clients
follow the prediction's websocket or poll without waiting.

The slots are shared fairly among the clients waiting now, as admission places are
(`serving/admission.py`): with n such clients (those holding a slot, those refused
for a full process in the last ASKING_SECONDS, and the asking one) a client may take a
slot only while it holds fewer than PREDICTION_MAX_WAITERS // n, at least one. A fixed
half per client let two clients take every slot. Alone, a client may hold half of them,
so a newcomer finds a slot free at once.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from django.conf import settings

from serving.admission import equal_share

ASKING_SECONDS = 5.0  # a refused client comes back within its Retry-After (2 s)
_lock = threading.Lock()
_waiting: Counter[str] = Counter()
_asking: dict[str, float] = {}  # refused for a full process: counted until then (monotonic)


@dataclass(frozen=True)
class WaitSlot:
    """Whether a wait was let in (truthy) and, if not, why, in the asking client's terms."""

    free: bool
    held: int  # the client's slots before this one
    share: int  # how many it may hold right now

    def __bool__(self) -> bool:
        return self.free

    @property
    def reason(self) -> str:
        if self.held >= self.share:
            return (
                f"You already hold {self.held} waiting requests on this server, your "
                f"share right now; follow the prediction's websocket or ask again without "
                f"?wait."
            )
        return (
            "Too many clients are waiting on this server; follow the prediction's "
            "websocket or ask again without ?wait in a moment."
        )


def client_share() -> int:
    """The most one client may hold alone: half the slots, at least one."""
    return max(1, settings.PREDICTION_MAX_WAITERS // 2)


def fair_share(clients: int) -> int:
    """What each of `clients` clients holding slots may hold (at least one)."""
    return equal_share(settings.PREDICTION_MAX_WAITERS, clients, client_share())


@contextmanager
def wait_slot(client: str) -> Iterator[WaitSlot]:
    """Yields whether a slot was free for this client (and holds it until the block ends)."""
    with _lock:
        now = time.monotonic()
        for gone in [c for c, until in _asking.items() if until <= now]:
            del _asking[gone]
        held = _waiting[client]
        share = fair_share(len(_waiting.keys() | _asking.keys() | {client}))
        free = held < share and sum(_waiting.values()) < settings.PREDICTION_MAX_WAITERS
        if free:
            _waiting[client] += 1
        elif held < share:  # the process is full: this client counts while it comes back
            _asking[client] = now + ASKING_SECONDS
    try:
        yield WaitSlot(free, held, share)
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
