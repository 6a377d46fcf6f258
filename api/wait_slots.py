"""How many requests this process holds open with `?wait=` at once, and for whom.

Each waiting request holds a web thread (gunicorn has a handful per process); without a
bound, a few clients waiting 60 s each held every thread and the process answered nobody.
Beyond PREDICTION_MAX_WAITERS a wait is refused with 503 and Retry-After, and clients
follow the prediction's websocket or poll without waiting.

The slots are shared among the clients waiting now as admission places are
(`predictions/admission.py`), counting those holding a slot, those refused for a full
process in the last ASKING_SECONDS, and the asking one. Each identified client is one
client and all anonymous clients together one more (the pool): with n of them a client
may hold PREDICTION_MAX_WAITERS // n, at least one; alone, half, so a newcomer finds a
slot free at once. Anonymous clients alone may use every slot; while an identified
client holds or asks for one, they hold together at most the pool's share, within
ADMISSION_ANONYMOUS_SHARE, shared among them the same way (each an IPv6 /48,
`admission.pool_client`). Unlike admission places, a slot is a thread: nobody goes past
PREDICTION_MAX_WAITERS, so an identified client that finds every slot taken waits for
one to end while the anonymous ones are refused until the pool is back under its share.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from django.conf import settings

from predictions.admission import anonymous_share, equal_share, is_anonymous, pool_client

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


def _share_and_room(client: str) -> tuple[int, bool]:
    """The client's share now, and whether a slot is free for it (under `_lock`)."""
    slots = settings.PREDICTION_MAX_WAITERS
    clients = _waiting.keys() | _asking.keys() | {client}
    pooled = [c for c in clients if is_anonymous(c)]
    identified = len(clients) - len(pooled)
    room = sum(_waiting.values()) < slots
    if not is_anonymous(client):
        return fair_share(identified + (1 if pooled else 0)), room
    allowance = slots
    if identified:
        allowance = equal_share(slots, identified + 1, anonymous_share(slots))
        room = room and sum(n for c, n in _waiting.items() if is_anonymous(c)) < allowance
    return equal_share(allowance, len(pooled), client_share()), room


@contextmanager
def wait_slot(client: str) -> Iterator[WaitSlot]:
    """Yields whether a slot was free for this client (and holds it until the block ends)."""
    client = pool_client(client)
    with _lock:
        now = time.monotonic()
        for gone in [c for c, until in _asking.items() if until <= now]:
            del _asking[gone]
        held = _waiting[client]
        share, room = _share_and_room(client)
        free = held < share and room
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
