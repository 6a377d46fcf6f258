"""What a process keeps for a few seconds of what rarely changes and every request reads.

Why: a warm request read model health's demotions and a price snapshot's existence from
the database each time, two of its statements, though they change a few times a day
(lab/records/scaling.md). Each process keeps an answer for LOOKUP_CACHE_SECONDS (0: not
at all); a change made in another process shows here within that time, one made in this
process at once (its writer calls `forget`).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

from django.conf import settings

V = TypeVar("V")


class LookupCache(Generic[V]):
    """At most `size` answers by key, each kept LOOKUP_CACHE_SECONDS from when it was read."""

    def __init__(self, size: int = 256) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._kept: OrderedDict[Hashable, tuple[float, V]] = OrderedDict()

    def get(self, key: Hashable) -> V | None:
        """The answer kept for `key` within LOOKUP_CACHE_SECONDS, else None: the caller
        reads it and `put`s it (no callback: this layer calls no app code)."""
        seconds = settings.LOOKUP_CACHE_SECONDS
        if seconds <= 0:
            return None
        with self._lock:
            kept = self._kept.get(key)
        if kept is None or time.monotonic() - kept[0] >= seconds:
            return None
        return kept[1]

    def put(self, key: Hashable, value: V) -> None:
        """Keep `value` for `key` from now on."""
        with self._lock:
            self._kept[key] = (time.monotonic(), value)
            self._kept.move_to_end(key)
            while len(self._kept) > self.size:
                self._kept.popitem(last=False)

    def forget(self, key: Hashable | None = None) -> None:
        """Drop the answer for `key` (every answer with None): this process changed it."""
        with self._lock:
            if key is None:
                self._kept.clear()
            else:
                self._kept.pop(key, None)
