"""Rate-limit counts taken from Redis in blocks, so a cached answer counts its asker
without a round trip.

A web process takes a block (a lease) of a client's window with one INCRBY and spends it
in memory. The window's counter never passes the limit (the script takes back any part of
a block over it), so no client is allowed more than its rate, however many processes
serve it. The cost: counts one process holds unspent are not another's to spend, so a
client spread over processes may be refused a little early. To keep that small, a block is
at most an eighth of what the window had left (one count near the limit) and at most
LEASE_MOST, and the counts of a block unused for IDLE_SECONDS go back to the window.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import redis

from plumbing.redis_client import registered_script
from predictions.rate_limits import Rate, retry_after

LEASE_SHARE = 8
LEASE_MOST = 64
IDLE_SECONDS = 1.0

# KEYS: the window's counter. ARGV: window seconds, counts asked for, limit.
# Returns {counts granted, the window's count after} or {0, seconds left} when refused.
_LEASE = """
local asked, limit = tonumber(ARGV[2]), tonumber(ARGV[3])
local used = redis.call('INCRBY', KEYS[1], asked)
if used == asked then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
local over = used - limit
if over <= 0 then return {asked, used} end
redis.call('DECRBY', KEYS[1], math.min(over, asked))
if over >= asked then return {0, redis.call('TTL', KEYS[1])} end
return {asked - over, limit}
"""
# KEYS: counters. ARGV: the counts to give back to each, while its window lasts.
_GIVE_BACK = """
for i, key in ipairs(KEYS) do
  if redis.call('EXISTS', key) == 1 then redis.call('DECRBY', key, ARGV[i]) end
end
return 0
"""


@dataclass
class Lease:
    left: int = 0  # counts taken and not spent
    size: int = 1  # the next block's size
    used_at: float = 0.0


class Leases:
    """This process's unspent counts, per window counter (`rate_limits.window_key`)."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self.lock = threading.Lock()
        self.held: dict[str, Lease] = {}

    def spend(self, counter: str, rate: Rate) -> int | None:
        """Count one request in `counter`'s window: None when allowed, else the seconds
        until the window ends (refused)."""
        now = time.monotonic()
        with self.lock:
            lease = self.held.setdefault(counter, Lease())
            lease.used_at = now
            if lease.left > 0:
                lease.left -= 1
                return None
            size = lease.size
        script = registered_script(self.client, _LEASE)
        granted, after = (int(n) for n in script([counter], [rate.period, size, rate.limit]))
        if granted == 0:
            return retry_after(after)
        with self.lock:
            lease = self.held.setdefault(counter, Lease())
            lease.left += granted - 1
            lease.size = max(1, min(LEASE_MOST, (rate.limit - after) // LEASE_SHARE))
        return None

    def forget(self) -> None:
        """Drop every unspent count without giving it back (its windows were reset)."""
        with self.lock:
            self.held.clear()

    def give_back_idle(self) -> None:
        """Counts unspent for IDLE_SECONDS go back to their windows (another process may
        serve the client now); the leases of windows that ended are dropped."""
        now = time.monotonic()
        with self.lock:
            idle = [key for key, lease in self.held.items() if now - lease.used_at >= IDLE_SECONDS]
            unspent = {key: self.held[key].left for key in idle if self.held[key].left > 0}
            for key in idle:
                del self.held[key]
        if unspent:
            registered_script(self.client, _GIVE_BACK)(list(unspent), list(unspent.values()))
