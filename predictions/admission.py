"""Admission control: at most so many pipelines in flight, shared fairly among the clients.

Why: without a bound, a burst of distinct cold requests was all accepted and whatever
the workers could not finish within PREDICTION_TIMEOUT failed after five minutes. Now a
request that needs the pipeline is admitted only while fewer than the limit are queued or
running; beyond it the client is told at once to come back later, with a Retry-After
taken from how fast pipelines have been finishing. Cached answers and joins to an
identical request in flight need no admission (joins have their own bound per client,
`predictions/follows.py`).

The places are shared among the clients asking now: those holding places, those refused
for a full service whose Retry-After (and a grace) has not passed, and the asking one.
Each identified client (an account, a stream client, a batch host, the watchlist) is one
client; all anonymous clients together (`anon:` keys) are one more, the anonymous pool,
because an address costs nothing to change: a /48 holds 65,536 /64s, and counted one each
they shrank every share to one and refused a token holder's first question.

* An identified client may hold floor(limit / n), n being the identified clients asking
  plus one for the pool when an anonymous client asks or holds a place; at least one,
  never more than ADMISSION_CLIENT_SHARE of the limit (or its own cap, the watchlist's).
  Under its share it is admitted even when the service is full, while there are no more
  identified clients than places and never past twice the limit: whoever took the places
  while the clients were fewer holds more than its share now and is refused until it
  drains to it, so the excess is theirs and ends within a pipeline's time. Anonymous
  clients hold at most `limit` places, so they alone never make it wait.
* Anonymous clients take only free places, never past the limit. Alone they may use every
  place; while an identified client holds or asks for one, the pool may hold its share
  as one client, floor(limit / n), within ADMISSION_ANONYMOUS_SHARE of the limit (half by
  default), and its clients are refused (503) until it is back under that. Inside the
  pool its places are shared the same way among the anonymous clients asking, each one
  IPv6 /48 or one IPv4 address (`rate_limits.pool_key`, which says why).
* Alone, a client gets ADMISSION_CLIENT_SHARE (half by default), not all: the other half
  lets a newcomer in without a drain; a deployment with a single client (a batch, a load
  test) sets it to 1.

The pipelines in flight are a Redis sorted set scored by deadline, so a request that was
lost never holds a place past its deadline; a hash names each place's client, and two
sorted sets (identified, anonymous) the clients refused for a full service. All are read
and changed by one Lua script, so the check and the take are one step.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from django.conf import settings

from plumbing import event_metrics
from plumbing.redis_client import get_redis, script
from predictions.rate_limits import pool_key

IN_FLIGHT_KEY = "stockserve:inflight"
OWNERS_KEY = "stockserve:inflight-owners"
# Clients refused for a full service, scored by when they stop counting as asking.
ASKING_KEY = "stockserve:inflight-asking"
ANONYMOUS_ASKING_KEY = "stockserve:inflight-asking-anonymous"
ASKING_GRACE_SECONDS = 5  # beyond its Retry-After, for the client's own round trip
DRAINED_PREFIX = "stockserve:drained:"
DRAIN_WINDOW_SECONDS = 60
DRAINED_TTL = 2 * DRAIN_WINDOW_SECONDS
ADMITTED, BUSY, OVER_SHARE = "admitted", "busy", "over-share"
OVER_FOLLOWS = "over-follows"  # joins: the client follows JOIN_MAX_PER_CLIENT already
ANONYMOUS_PREFIX = "anon:"  # an address, not an account, a stream client or a batch host

# KEYS: in flight, owners, identified asking, anonymous asking. ARGV: now, deadline, id,
# client, limit, the client's share when alone, the anonymous pool's most. Returns {code,
# in flight, the client's places, its share, the pool's places, the pool's allowance}:
# code 0 admitted, 1 busy (the service is full), 2 over share, 3 the anonymous pool is
# full. The clients are counted from the owners hash (at most twice `limit` entries) and
# the two asking sets' entries not yet lapsed (lapsed ones are removed when a refusal
# adds one, and both sets go once every entry has: then, as when nobody was refused
# lately, one EXISTS reads them), so no count can drift from the places; a client
# both holding and asking counts once. A client above its share hears so even when the
# service is full (it is why others wait); one at its share hears that the service is
# full when it is. An identified client under its share is admitted even when the
# service is full, while there are no more identified clients than places and fewer than
# twice the limit in flight. An anonymous one only takes a free place within the pool's
# allowance: all of the limit while no identified client holds or asks, else the pool's
# fair share as one client, within its most.
_ADMIT = """
local now = tonumber(ARGV[1])
local lapsed = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)
if #lapsed > 0 then
  redis.call('HDEL', KEYS[2], unpack(lapsed))
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
end
local client, limit, most = ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[6])
local function anonymous(c) return string.sub(c, 1, 5) == 'anon:' end
local function asking(key, c)
  local until_ = redis.call('ZSCORE', key, c)
  return until_ and tonumber(until_) > now
end
local held, pool_held = {}, 0
for _, owner in ipairs(redis.call('HVALS', KEYS[2])) do
  held[owner] = (held[owner] or 0) + 1
  if anonymous(owner) then pool_held = pool_held + 1 end
end
local mine = held[client] or 0
held[client] = mine
local identified, pooled = 0, 0
local refusals = redis.call('EXISTS', KEYS[3], KEYS[4]) > 0
if refusals then
  local after = '(' .. ARGV[1]
  identified = redis.call('ZCOUNT', KEYS[3], after, '+inf')
  pooled = redis.call('ZCOUNT', KEYS[4], after, '+inf')
  if identified + pooled == 0 then redis.call('DEL', KEYS[3], KEYS[4]) end  -- all lapsed
end
for owner, _ in pairs(held) do
  if anonymous(owner) then
    if not (refusals and asking(KEYS[4], owner)) then pooled = pooled + 1 end
  elseif not (refusals and asking(KEYS[3], owner)) then
    identified = identified + 1
  end
end
local in_flight = redis.call('ZCARD', KEYS[1])
local code, share, allowance = 0, 0, limit
if anonymous(client) then
  if identified > 0 then
    allowance = math.max(1, math.min(tonumber(ARGV[7]), math.floor(limit / (identified + 1))))
  end
  share = math.max(1, math.min(most, math.floor(allowance / pooled)))
  if mine > share then code = 2
  elseif identified > 0 and pool_held >= allowance then code = 3
  elseif in_flight >= limit then code = 1
  elseif mine >= share then code = 2 end
else
  local clients = identified
  if pooled > 0 then clients = clients + 1 end
  share = math.max(1, math.min(most, math.floor(limit / clients)))
  if mine > share then code = 2
  elseif mine >= share then
    if in_flight >= limit then code = 1 else code = 2 end
  elseif in_flight >= limit and (math.floor(limit / identified) < 1 or in_flight >= 2 * limit) then
    code = 1
  end
end
if code ~= 0 then return {code, in_flight, mine, share, pool_held, allowance} end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[3])
redis.call('HSET', KEYS[2], ARGV[3], client)
if anonymous(client) then pool_held = pool_held + 1 end
return {0, in_flight + 1, mine + 1, share, pool_held, allowance}
"""
# KEYS: owners. ARGV: id, client. The place stays in flight, owned by nobody.
_DISOWN = """
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
return redis.call('HDEL', KEYS[1], ARGV[1])
"""
# A Lua function, so the final step can free a place in the same script as its other
# writes (predictions/final.py): 1 when `id` held a place, 0 when it held none.
RELEASE_LUA = """
local function release(in_flight, owners, id)
  if redis.call('ZREM', in_flight, id) == 0 then return 0 end
  redis.call('HDEL', owners, id)
  return 1
end
"""
_RELEASE = RELEASE_LUA + "return release(KEYS[1], KEYS[2], ARGV[1])"
PLACE_KEYS = (IN_FLIGHT_KEY, OWNERS_KEY)


@dataclass(frozen=True)
class Decision:
    outcome: str  # ADMITTED, BUSY, OVER_SHARE or OVER_FOLLOWS
    in_flight: int
    limit: int
    retry_after: int = 0
    held: int = 0  # the asking client's places (after an admission, with the new one)
    share: int = 0  # how many it may hold right now (OVER_FOLLOWS: questions it may follow)
    pool: int = 0  # BUSY for a full anonymous pool: the places the pool may hold right now

    @property
    def admitted(self) -> bool:
        return self.outcome == ADMITTED

    def reason(self) -> str:
        """Why not, in a sentence that names only the asking client's own use."""
        if self.outcome == BUSY and self.pool:
            return (
                f"The places anonymous clients may hold right now ({self.pool} of the "
                f"service's {self.limit}) are taken; try again in {self.retry_after} s, or "
                f"ask with an API token."
            )
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
    the rule of admission places and of `?wait` slots (api/wait_slots.py)."""
    return max(1, min(most, limit // max(1, clients)))


def anonymous_share(limit: int) -> int:
    """The most the anonymous pool may hold while identified clients ask:
    ADMISSION_ANONYMOUS_SHARE of `limit`, at least one."""
    return max(1, min(limit, math.floor(limit * settings.ADMISSION_ANONYMOUS_SHARE)))


def is_anonymous(client: str) -> bool:
    return client.startswith(ANONYMOUS_PREFIX)


def pool_client(client: str) -> str:
    """The key a client shares places, `?wait` slots and joins under: an anonymous client's
    address as `rate_limits.pool_key` counts it (an IPv6 /48), any other client itself."""
    if not is_anonymous(client):
        return client
    return ANONYMOUS_PREFIX + pool_key(client[len(ANONYMOUS_PREFIX) :])


def queue_rank(client: str, place: int) -> int:
    """How far behind an identified client's first pipeline this one queues at the broker:
    a client's first place 0, its second 1, its later ones 2; an anonymous client's one
    step further back. Places share the service; ranks share the workers' time, so a client
    asking once is served next, not after another's many. Anonymous clients come after
    identified ones because an address costs nothing to change: two of them at their rate
    limit otherwise keep a client with a token waiting behind them (the lab's abuse study)."""
    anonymous = 1 if is_anonymous(client) else 0
    return min(place - 1 + anonymous, 2)


def admit(
    request_id: str, client: str, deadline: float, limit: int, most: int | None = None
) -> Decision:
    """Take a place for `request_id` if the client is under its fair share (and `most`,
    a client's own cap) and the service (for an anonymous client, its pool) has one free.
    An anonymous client is counted by its network (`pool_client`)."""
    now = time.time()
    client = pool_client(client)
    asking = ANONYMOUS_ASKING_KEY if is_anonymous(client) else ASKING_KEY
    keys = [IN_FLIGHT_KEY, OWNERS_KEY, ASKING_KEY, ANONYMOUS_ASKING_KEY]
    argv: list[str | float] = [
        now,
        deadline,
        request_id,
        client,
        limit,
        client_share(limit) if most is None else min(most, client_share(limit)),
        anonymous_share(limit),
    ]
    reply = script(_ADMIT)(keys, argv)
    code, in_flight, held, share, pool_held, allowance = (int(v) for v in reply)
    if code == 0:
        return Decision(ADMITTED, in_flight, limit, held=held, share=share)
    outcome = OVER_SHARE if code == 2 else BUSY
    pool = allowance if code == 3 else 0
    wait = retry_after(pool_held, allowance) if pool else retry_after(in_flight, limit)
    pipe = get_redis().pipeline(transaction=False)
    event_metrics.count_refusal(pipe, outcome)
    if outcome == BUSY:  # it will come back: its share counts until then
        pipe.zremrangebyscore(asking, "-inf", now)  # those whose time lapsed
        pipe.zadd(asking, {client: now + wait + ASKING_GRACE_SECONDS})
    pipe.execute()
    return Decision(outcome, in_flight, limit, wait, held, share, pool)


def over_follows(followed: int, bound: int, limit: int) -> Decision:
    """The client follows as many questions in flight as it may (joins, not places)."""
    return Decision(OVER_FOLLOWS, in_flight(), limit, retry_after(limit, limit), followed, bound)


def release(request_id: str) -> None:
    """The request reached a final state: its place is free (a no-op if it held none)."""
    if script(_RELEASE)(list(PLACE_KEYS), [request_id]):
        count_drained()


def count_drained() -> None:
    """A place was freed this second: counted with this process's next metrics send (at
    most FLUSH_SECONDS late, within a minute's rate), not a command of its own."""
    event_metrics.count_expiring_later(f"{DRAINED_PREFIX}{int(time.time())}", DRAINED_TTL)


def disown(request_id: str, client: str) -> bool:
    """`client` stops answering for the place of `request_id` (False: it held none, or the
    request has ended): the place no longer counts in the client's share, but still
    counts among the service's places while the pipeline runs, until `release` or the
    deadline. For a waiter that gives up on a request others still follow (a batch)."""
    return bool(script(_DISOWN)([OWNERS_KEY], [request_id, pool_client(client)]))


def drain_rate() -> float:
    """Pipelines finished per second over the last minute (this process's own releases
    sent first)."""
    event_metrics.flush()
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


def owners() -> list[str]:
    """The clients holding the places now (at most twice the limit); one round trip."""
    found: list[bytes] = get_redis().hvals(OWNERS_KEY)  # type: ignore[assignment]
    return [owner.decode() for owner in found]
