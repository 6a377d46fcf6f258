"""Ready answers: the rendered JSON of the newest prediction per (symbol, horizon), in Redis.

Why bytes: a cached answer is served thousands of times a second, so it is rendered once
and then returned as stored, for one Redis GET instead of a query and a serializer pass.
The web side renders and stores it (it owns the representation). A worker that finishes a
newer prediction supersedes the stored answer: it raises the version and drops the bytes,
so a render of an older prediction that races with it can never be stored over it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.utils import timezone

from marketdata import market_clock
from plumbing.redis_client import get_redis, script, text
from predictions.models import PredictionRequest

PREFIX = "stockserve:answer"

# KEYS: answer, version. ARGV: body, version of the body, ttl.
_STORE = """
local newest = tonumber(redis.call('GET', KEYS[2]) or '0')
if tonumber(ARGV[2]) < newest then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[3])
return 1
"""
# A Lua function, so the final step can supersede in the same script as its other writes
# (predictions/final.py). The version only rises: a newer one set before is put back (the
# script is atomic), so the usual case is one command instead of a GET and a SET.
SUPERSEDE_LUA = """
local function supersede(answer, version_key, version, ttl)
  local newest = redis.call('SET', version_key, version, 'EX', ttl, 'GET')
  if newest and tonumber(newest) > tonumber(version) then
    redis.call('SET', version_key, newest, 'EX', ttl)
  end
  redis.call('DEL', answer)
end
"""
# KEYS: answer, version. ARGV: new version, ttl.
_SUPERSEDE = SUPERSEDE_LUA + "supersede(KEYS[1], KEYS[2], ARGV[1], ARGV[2])\nreturn 1"


def answer_key(symbol: str, horizon: int) -> str:
    return f"{PREFIX}:{symbol}:{horizon}"


def _version_key(symbol: str, horizon: int) -> str:
    return f"{PREFIX}-version:{symbol}:{horizon}"


def enabled() -> bool:
    return settings.PREDICTION_CACHE_TTL > 0


def lookup(symbol: str, horizon: int) -> bytes | None:
    if not enabled():
        return None
    body = get_redis().get(answer_key(symbol, horizon))
    return body.encode() if isinstance(body, str) else body


def store(symbol: str, horizon: int, body: bytes, version: float, ttl: int) -> bool:
    """Keep `body` for `ttl` seconds unless a newer prediction superseded `version`."""
    if not enabled() or ttl <= 0:
        return False
    keys = [answer_key(symbol, horizon), _version_key(symbol, horizon)]
    return bool(script(_STORE)(keys, [body, repr(version), ttl]))


def supersede(symbol: str, horizon: int, version: float) -> None:
    """A newer prediction finished: older renders may no longer be stored or served."""
    if not enabled():
        return
    argv: list[str | int] = [repr(version), settings.PREDICTION_CACHE_TTL]
    script(_SUPERSEDE)(supersede_keys(symbol, horizon), argv)


def supersede_keys(symbol: str, horizon: int) -> list[str]:
    """The keys `SUPERSEDE_LUA` changes: the stored answer and its version."""
    return [answer_key(symbol, horizon), _version_key(symbol, horizon)]


def supersede_symbol(symbol: str, version: float) -> int:
    """Another generation serves this symbol now: every stored answer for it came from the
    one it replaced. Drops them, and the database's finished predictions from before now
    stop counting as cached answers (`changed_at`)."""
    get_redis().set(_changed_key(symbol), repr(version))
    return _supersede_matching(f"{PREFIX}:{symbol}:*", version)


def _changed_key(symbol: str) -> str:
    return f"{PREFIX}-changed:{symbol}"


ALL_CHANGED_KEY = f"{PREFIX}-changed"  # the last new market day: every answer is older


def changed_at(symbol: str) -> float | None:
    """When the symbol's answers last went stale (epoch seconds), if ever: a new market day
    or another serving generation. The database's finished predictions from before then
    stop counting as cached answers, so the next request computes one and stores it again
    (without this, a new day left every question on the slow path for good)."""
    raw = get_redis().mget(_changed_key(symbol), ALL_CHANGED_KEY)
    values = [float(text(value)) for value in raw if value is not None]
    return max(values) if values else None


def newest_answer(symbol: str, horizon: int) -> PredictionRequest | None:
    """The newest prediction the pipeline finished for this question while fresh: within
    PREDICTION_CACHE_TTL, and (in a replay) since the market clock's last new day and the
    symbol's last change of serving generation (older ones saw older bars or models)."""
    fresh_since = timezone.now() - timedelta(seconds=settings.PREDICTION_CACHE_TTL)
    day_began = market_clock.day_began()
    if day_began is not None:
        fresh_since = max(fresh_since, day_began)
    changed = changed_at(symbol)
    if changed is not None:
        fresh_since = max(fresh_since, datetime.fromtimestamp(changed, tz=UTC))
    return PredictionRequest.objects.answer_for(symbol, horizon, fresh_since)


def supersede_all(version: float, keep: Iterable[tuple[str, int]] = (), grace: int = 0) -> int:
    """A new market day: every stored answer saw older bars. Drops each one and refuses
    renders older than `version`; how many questions it covered.

    The questions in `keep` are being computed again on the new bars: their stored answers
    stay until the new prediction replaces them (`supersede`, when it finishes), for at
    most `grace` seconds, so askers are not all sent to the slow path while it runs."""
    get_redis().set(ALL_CHANGED_KEY, repr(version))
    kept = {answer_key(symbol, horizon) for symbol, horizon in keep}
    for key in kept:
        _shorten(key, grace)
    return _supersede_matching(f"{PREFIX}:*", version, skip=kept)


def _shorten(key: str, seconds: int) -> None:
    """At most `seconds` more for a stored answer (a pipeline that never finishes cannot
    keep it longer)."""
    left = get_redis().ttl(key)
    if left > seconds:
        get_redis().expire(key, max(1, seconds))


def _supersede_matching(pattern: str, version: float, skip: Collection[str] = ()) -> int:
    if not enabled():
        return 0
    superseded = 0
    for key in get_redis().scan_iter(match=pattern):
        if text(key) in skip:
            superseded += 1
            continue
        _prefix, symbol, horizon = text(key).rsplit(":", 2)
        supersede(symbol, int(horizon), version)
        superseded += 1
    return superseded
