"""Admission control: at most so many pipelines in flight, and a fair share per client.

Why: without a bound, a burst of distinct cold requests was all accepted and whatever
the workers could not finish within PREDICTION_TIMEOUT failed after five minutes. Now a
request that needs the pipeline is admitted only while fewer than the limit are queued or
running; beyond it the client is told at once to come back later, with a Retry-After
taken from how fast pipelines have been finishing. Cached answers and joins to an
identical request in flight need no admission (joins have their own bound per client,
`serving/follows.py`).

The share is fair among the clients asking now: with n of them (those holding places,
those refused for a full service who were told to come back and whose Retry-After has
not passed, and the asking one) a client may take a place only while it holds fewer
than floor(limit / n), at least one, and never more than ADMISSION_CLIENT_SHARE of the
limit. A fixed half per client let two clients hold every place. A newcomer under its
share is admitted at once, even past the limit (never past twice it): the clients that
took the places while they were fewer now hold more than their share and are refused
until they drain to it, so the service returns under its limit within a pipeline's time
(seconds) and the newcomer never waits behind them. Only with more clients than places
does a newcomer wait for a drain. Alone, a client gets ADMISSION_CLIENT_SHARE (half by
default), not all: the other half lets a newcomer in without exceeding the limit; a
deployment with a single client (a batch, a load test) sets it to 1.

The pipelines in flight are a Redis sorted set scored by deadline, so a request that was
lost never holds a place past its deadline; a hash names each place's client. Both are
read and changed by one Lua script, so the check and the take are one step.
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
# Clients refused for a full service, scored by when they stop counting as asking.
ASKING_KEY = "stockserve:inflight-asking"
ASKING_GRACE_SECONDS = 5  # beyond its Retry-After, for the client's own round trip
DRAINED_PREFIX = "stockserve:drained:"
DRAIN_WINDOW_SECONDS = 60
ADMITTED, BUSY, OVER_SHARE = "admitted", "busy", "over-share"
OVER_FOLLOWS = "over-follows"  # joins: the client follows JOIN_MAX_PER_CLIENT already

# KEYS: in flight, owners, asking. ARGV: now, deadline, id, client, limit, the share
# when alone. Returns {code, in flight, the client's places, the client's share}: code 0
# admitted, 1 busy (the service is full), 2 over share. The clients holding places are
# counted from the owners hash (at most `limit` entries), so no count can drift from the
# places; a client both holding and asking counts once. A client above its share hears
# so even when the service is full (it is why others wait); one at its share hears that
# the service is full when it is, as a client alone with every place does. One under its
# share is admitted even when the service is full, while there are no more clients than
# places: the others hold more than their share now and are refused until they drain to
# it, so the excess is theirs, ends within a pipeline's time, and never passes twice the
# limit. With more clients than places a newcomer waits for a drain.
_ADMIT = """
local now = tonumber(ARGV[1])
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)) do
  redis.call('HDEL', KEYS[2], id)
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
local held = {}
for _, owner in ipairs(redis.call('HVALS', KEYS[2])) do
  held[owner] = (held[owner] or 0) + 1
end
local clients = redis.call('ZCARD', KEYS[3])
for owner, _ in pairs(held) do
  if not redis.call('ZSCORE', KEYS[3], owner) then clients = clients + 1 end
end
local mine = held[ARGV[4]] or 0
if mine == 0 and not redis.call('ZSCORE', KEYS[3], ARGV[4]) then clients = clients + 1 end
local limit = tonumber(ARGV[5])
local share = math.max(1, math.min(tonumber(ARGV[6]), math.floor(limit / clients)))
local in_flight = redis.call('ZCARD', KEYS[1])
if mine > share then return {2, in_flight, mine, share} end
if mine >= share then
  if in_flight >= limit then return {1, in_flight, mine, share} end
  return {2, in_flight, mine, share}
end
if in_flight >= limit and (math.floor(limit / clients) < 1 or in_flight >= 2 * limit) then
  return {1, in_flight, mine, share}
end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[3])
redis.call('HSET', KEYS[2], ARGV[3], ARGV[4])
return {0, in_flight + 1, mine + 1, share}
"""
# KEYS: in flight, owners, this second's drain counter. ARGV: id.
_RELEASE = """
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('INCR', KEYS[3])
redis.call('EXPIRE', KEYS[3], 120)
return 1
"""


@dataclass(frozen=True)
class Decision:
    outcome: str  # ADMITTED, BUSY, OVER_SHARE or OVER_FOLLOWS
    in_flight: int
    limit: int
    retry_after: int = 0
    held: int = 0  # the asking client's places (after an admission, with the new one)
    share: int = 0  # how many it may hold right now (OVER_FOLLOWS: questions it may follow)

    @property
    def admitted(self) -> bool:
        return self.outcome == ADMITTED

    def reason(self) -> str:
        """Why not, in a sentence that names only the asking client's own use."""
        if self.outcome == BUSY:
            return (
                f"The service is at capacity ({self.limit} predictions in progress); "
                f"try again in {self.retry_after} s."
            )
        if self.outcome == OVER_FOLLOWS:
            return (
                f"You already follow {self.held} questions in progress, the most one client "
                f"may follow at once ({self.share}); try again in {self.retry_after} s."
            )
        return (
            f"You already have {self.held} predictions in progress: your share of the "
            f"service's {self.limit} is {self.share} right now; try again in "
            f"{self.retry_after} s."
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
    """The most one client may hold, alone: ADMISSION_CLIENT_SHARE of the limit, at least 1."""
    return max(1, math.floor(limit * settings.ADMISSION_CLIENT_SHARE))


def fair_share(limit: int, clients: int) -> int:
    """What each of `clients` clients holding places may hold: an equal part of the limit
    (at least one), within `client_share`. The admission script computes the same."""
    return equal_share(limit, clients, client_share(limit))


def equal_share(limit: int, clients: int, most: int) -> int:
    """An equal part of `limit` among `clients` clients, at least one and at most `most`:
    the rule of admission places and of `?wait` slots (api/waiting.py)."""
    return max(1, min(most, limit // max(1, clients)))


ANONYMOUS_PREFIX = "anon:"  # an address, not an account, a stream client or a batch host


def queue_rank(client: str, place: int) -> int:
    """How far behind an identified client's first pipeline this one queues at the broker:
    a client's first place 0, its second 1, its later ones 2; an anonymous client's one
    step further back. Places share the service; ranks share the workers' time, so a client
    asking once is served next, not after another's many. Anonymous clients come after
    identified ones because an address costs nothing to change: two of them at their rate
    limit otherwise keep a client with a token waiting behind them (`make abuse`)."""
    anonymous = 1 if client.startswith(ANONYMOUS_PREFIX) else 0
    return min(place - 1 + anonymous, 2)


def admit(
    request_id: str, client: str, deadline: float, limit: int, most: int | None = None
) -> Decision:
    """Take a place for `request_id` if the client is under its fair share (and `most`,
    a client's own cap) and the service has one free."""
    now = time.time()
    keys = [IN_FLIGHT_KEY, OWNERS_KEY, ASKING_KEY]
    argv: list[str | float] = [
        now,
        deadline,
        request_id,
        client,
        limit,
        client_share(limit) if most is None else min(most, client_share(limit)),
    ]
    code, in_flight, held, share = (int(v) for v in script(_ADMIT)(keys, argv))
    if code == 0:
        return Decision(ADMITTED, in_flight, limit, held=held, share=share)
    outcome = BUSY if code == 1 else OVER_SHARE
    wait = retry_after(in_flight, limit)
    pipe = get_redis().pipeline(transaction=False)
    event_metrics.count_refusal(pipe, outcome)
    if outcome == BUSY:  # it will come back: its share counts until then
        pipe.zadd(ASKING_KEY, {client: now + wait + ASKING_GRACE_SECONDS})
    pipe.execute()
    return Decision(outcome, in_flight, limit, wait, held, share)


def over_follows(followed: int, bound: int, limit: int) -> Decision:
    """The client follows as many questions in flight as it may (joins, not places)."""
    return Decision(OVER_FOLLOWS, in_flight(), limit, retry_after(limit, limit), followed, bound)


def release(request_id: str) -> None:
    """The request reached a final state: its place is free (a no-op if it held none)."""
    drained = f"{DRAINED_PREFIX}{int(time.time())}"
    script(_RELEASE)([IN_FLIGHT_KEY, OWNERS_KEY, drained], [request_id])


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
