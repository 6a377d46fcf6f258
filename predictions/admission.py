"""Admission control: at most so many pipelines in flight, and a fair share per client.

Why: without a bound, a burst of distinct cold requests was all accepted and whatever
the workers could not finish within PREDICTION_TIMEOUT failed after five minutes. Now a
request that needs the pipeline is admitted only while fewer than the limit are queued or
running; beyond it the client is told at once to come back later, with a Retry-After
taken from how fast pipelines have been finishing. Cached answers and joins to an
identical request in flight need no admission.

The pipelines in flight are a Redis sorted set scored by deadline, so a request that was
lost never holds a place past its deadline; each client's own are a second set.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from django.conf import settings

from predictions import event_metrics
from predictions.redis_client import get_redis, script

IN_FLIGHT_KEY = "stockserve:inflight"
OWNERS_KEY = "stockserve:inflight-owners"
CLIENT_PREFIX = "stockserve:inflight-client:"
DRAINED_PREFIX = "stockserve:drained:"
DRAIN_WINDOW_SECONDS = 60
ADMITTED, BUSY, OVER_SHARE = "admitted", "busy", "over-share"

# KEYS: in flight, owners. ARGV: now, deadline, id, client, limit, client limit, ttl.
_ADMIT = """
local now = tonumber(ARGV[1])
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)) do
  local owner = redis.call('HGET', KEYS[2], id)
  if owner then redis.call('ZREM', ARGV[8] .. owner, id) end
  redis.call('HDEL', KEYS[2], id)
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local client_key = ARGV[8] .. ARGV[4]
redis.call('ZREMRANGEBYSCORE', client_key, '-inf', now)
local in_flight = redis.call('ZCARD', KEYS[1])
if in_flight >= tonumber(ARGV[5]) then return {1, in_flight} end
if redis.call('ZCARD', client_key) >= tonumber(ARGV[6]) then return {2, in_flight} end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[3])
redis.call('ZADD', client_key, ARGV[2], ARGV[3])
redis.call('EXPIRE', client_key, ARGV[7])
redis.call('HSET', KEYS[2], ARGV[3], ARGV[4])
return {0, in_flight + 1}
"""
# KEYS: in flight, owners, this second's drain counter. ARGV: id, client prefix.
_RELEASE = """
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then return 0 end
local owner = redis.call('HGET', KEYS[2], ARGV[1])
if owner then redis.call('ZREM', ARGV[2] .. owner, ARGV[1]) end
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('INCR', KEYS[3])
redis.call('EXPIRE', KEYS[3], 120)
return 1
"""


@dataclass(frozen=True)
class Decision:
    outcome: str  # ADMITTED, BUSY or OVER_SHARE
    in_flight: int
    limit: int
    retry_after: int = 0

    @property
    def admitted(self) -> bool:
        return self.outcome == ADMITTED

    def reason(self) -> str:
        if self.outcome == BUSY:
            return (
                f"The service is at capacity ({self.limit} predictions in progress); "
                f"try again in {self.retry_after} s."
            )
        share = client_share(self.limit)
        return (
            f"You already have {share} predictions in progress, your share of the "
            f"service's {self.limit}; try again in {self.retry_after} s."
        )


def in_flight_limit(model_processes: int) -> int:
    """ADMISSION_MAX_IN_FLIGHT, else ADMISSION_PER_PROCESS for each live model process.

    A model process (a pool process consuming `cpu` or `gpu`) finishes a cold pipeline's
    share in a few seconds, so a few per process drain well within PREDICTION_TIMEOUT.
    """
    if settings.ADMISSION_MAX_IN_FLIGHT:
        return settings.ADMISSION_MAX_IN_FLIGHT
    return settings.ADMISSION_PER_PROCESS * max(1, model_processes)


def client_share(limit: int) -> int:
    return max(1, math.floor(limit * settings.ADMISSION_CLIENT_SHARE))


def admit(request_id: str, client: str, deadline: float, limit: int) -> Decision:
    """Take a place for `request_id` if the service and the client have one free."""
    now = time.time()
    ttl = settings.PREDICTION_TIMEOUT * 2
    keys = [IN_FLIGHT_KEY, OWNERS_KEY]
    argv: list[str | float] = [
        now,
        deadline,
        request_id,
        client,
        limit,
        client_share(limit),
        ttl,
        CLIENT_PREFIX,
    ]
    code, in_flight = script(_ADMIT)(keys, argv)
    if code == 0:
        return Decision(ADMITTED, int(in_flight), limit)
    outcome = BUSY if code == 1 else OVER_SHARE
    pipe = get_redis().pipeline(transaction=False)
    event_metrics.count_refusal(pipe, outcome)
    pipe.execute()
    return Decision(outcome, int(in_flight), limit, retry_after(int(in_flight), limit))


def release(request_id: str) -> None:
    """The request reached a final state: its place is free (a no-op if it held none)."""
    drained = f"{DRAINED_PREFIX}{int(time.time())}"
    script(_RELEASE)([IN_FLIGHT_KEY, OWNERS_KEY, drained], [request_id, CLIENT_PREFIX])


def drain_rate() -> float:
    """Pipelines finished per second over the last minute."""
    now = int(time.time())
    keys = [f"{DRAINED_PREFIX}{s}" for s in range(now - DRAIN_WINDOW_SECONDS + 1, now + 1)]
    counts = get_redis().mget(keys)
    return sum(int(count or 0) for count in counts) / DRAIN_WINDOW_SECONDS


def retry_after(in_flight: int, limit: int) -> int:
    """Seconds until a place is likely free at the measured drain rate (1 to 60)."""
    rate = drain_rate()
    if rate <= 0:
        return settings.ADMISSION_RETRY_AFTER_IDLE
    waiting = max(1, in_flight - limit + 1)
    return max(1, min(60, math.ceil(waiting / rate)))


def in_flight() -> int:
    return int(get_redis().zcount(IN_FLIGHT_KEY, time.time(), "+inf"))
