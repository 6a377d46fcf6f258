"""Which questions in flight each client follows: joins counted against the client.

Why: joining an identical request in flight needs no admission place, and each join was a
new row (and an event). One address asking one question 100 times while it ran made 100
rows; at the anonymous rate that was ~170,000 rows a day. Now a client asking a question it
already follows gets its own follower back (no new row), and may follow at most
JOIN_MAX_PER_CLIENT questions in flight at once. An anonymous client is counted as admission
counts it (`admission.pool_client`: an IPv6 /48), so a site's many /64s share one bound.

Per client, a sorted set of the leaders it follows, scored by the leader's deadline (an
entry lapses with its leader), and a hash from each leader to the client's follower. A
leader usually ends long before its deadline, so when a client reaches its bound the
leaders that ended are dropped (`forget`) before it is refused. Anonymous followers carry
no owner in their row, so Redis is where a client's follows are found.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from plumbing.redis_client import get_redis, script, text
from predictions.admission import pool_client

PREFIX = "stockserve:inflight-follows:"  # + client; "inflight*" is cleared with admission
NEW, EXISTING, FULL = 0, 1, 2

# KEYS: the client's leaders (sorted set by deadline), leader -> follower (hash).
# ARGV: now, leader id, leader deadline, follower id ("" only looks), bound, ttl.
# Returns {NEW, followed} / {EXISTING, follower id} / {FULL, followed}.
_FOLLOW = """
local now = tonumber(ARGV[1])
for _, leader in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)) do
  redis.call('HDEL', KEYS[2], leader)
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local existing = redis.call('HGET', KEYS[2], ARGV[2])
if existing then return {1, existing} end
local followed = redis.call('ZCARD', KEYS[1])
if followed >= tonumber(ARGV[5]) then return {2, followed} end
if ARGV[4] == '' then return {0, followed} end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[2])
redis.call('HSET', KEYS[2], ARGV[2], ARGV[4])
redis.call('EXPIRE', KEYS[1], ARGV[6])
redis.call('EXPIRE', KEYS[2], ARGV[6])
return {0, followed + 1}
"""


@dataclass(frozen=True)
class Follow:
    outcome: int  # NEW (may follow / now follows), EXISTING (follower_id) or FULL
    followed: int = 0  # questions in flight the client follows
    follower_id: str = ""


def _keys(client: str) -> list[str]:
    client = pool_client(client)
    return [f"{PREFIX}{client}", f"{PREFIX}{client}:followers"]


def _run(client: str, leader_id: str, deadline: float, follower_id: str, now: float) -> Follow:
    ttl = settings.PREDICTION_TIMEOUT * 2
    argv: list[str | float | int] = [
        now,
        leader_id,
        deadline,
        follower_id,
        settings.JOIN_MAX_PER_CLIENT,
        ttl,
    ]
    code, value = script(_FOLLOW)(_keys(client), argv)
    if int(code) == EXISTING:
        return Follow(EXISTING, follower_id=text(value))
    return Follow(int(code), followed=int(value))


def look(client: str, leader_id: str, deadline: float, now: float) -> Follow:
    """Does the client follow this leader already (EXISTING), may it (NEW), or not (FULL)?"""
    return _run(client, leader_id, deadline, "", now)


def register(client: str, leader_id: str, deadline: float, follower_id: str, now: float) -> Follow:
    """Record the client's new follower; EXISTING when another one won a race, FULL when the
    bound was reached meanwhile."""
    return _run(client, leader_id, deadline, follower_id, now)


def followed(client: str) -> list[str]:
    """The leaders the client follows (lapsed ones included until the next look)."""
    members: list[bytes] = get_redis().zrange(_keys(client)[0], 0, -1)  # type: ignore[assignment]
    return [text(member) for member in members]


def forget(client: str, leader_ids: list[str]) -> None:
    """Leaders that ended no longer count against the client."""
    if not leader_ids:
        return
    zset, followers = _keys(client)
    pipe = get_redis().pipeline(transaction=False)
    pipe.zrem(zset, *leader_ids)
    pipe.hdel(followers, *leader_ids)
    pipe.execute()
