"""The market clock: which trading day it is, the same for every process.

`live`: the wall clock; providers serve every finished bar (a session still trading is
dropped), and new bars arrive when the market makes them. `replay`: the offline sample
data is served only up to the clock's date, and the clock moves one trading day at a time
(on its own every REPLAY_SECONDS_PER_DAY while running, or when an operator steps it), so
forecasts the service made can mature and be scored on a machine with no network.

The replay's state is one Redis hash, so the web processes, the workers and the
operator's commands agree on the date. A step is a compare-and-set on the date: two
ticks racing for the same step move the clock once.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, date, datetime

import numpy as np
from django.conf import settings
from django.utils import timezone

from plumbing.redis_client import get_redis, script, text

LIVE, REPLAY = "live", "replay"
KEY = "stockserve:clock"

# KEYS: the clock. ARGV: the date expected now, the new date, now.
_STEP = """
if redis.call('HGET', KEYS[1], 'date') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'date', ARGV[2], 'stepped_at', ARGV[3])
return 1
"""


@dataclass(frozen=True)
class ClockState:
    mode: str
    today: date | None  # None: live, every bar the providers have
    running: bool
    seconds_per_day: float
    stepped_at: float  # epoch seconds of the last date change (0: never)
    end: date | None
    resumed_at: float = 0.0  # epoch seconds the replay last started running

    def as_dict(self) -> dict[str, object]:
        return {
            "mode": self.mode,
            "date": self.today.isoformat() if self.today else None,
            "running": self.running,
            "seconds_per_day": self.seconds_per_day,
            "end": self.end.isoformat() if self.end else None,
        }


def mode() -> str:
    return str(settings.MARKET_CLOCK)


def is_replay() -> bool:
    return mode() == REPLAY


def _ensure() -> dict[str, str]:
    """The replay's hash, started at REPLAY_START (running) the first time anyone asks."""
    redis = get_redis()
    raw = redis.hgetall(KEY)
    if not raw:
        initial = {
            "date": settings.REPLAY_START.isoformat(),
            "running": "1" if settings.REPLAY_AUTOSTART else "0",
            "seconds_per_day": repr(float(settings.REPLAY_SECONDS_PER_DAY)),
            "stepped_at": repr(time.time()),
        }
        for field_name, value in initial.items():
            redis.hsetnx(KEY, field_name, value)
        raw = redis.hgetall(KEY)
    return {text(k): text(v) for k, v in raw.items()}


def state() -> ClockState:
    if not is_replay():
        return ClockState(LIVE, None, True, 0.0, 0.0, None)
    raw = _ensure()
    return ClockState(
        REPLAY,
        date.fromisoformat(raw["date"]),
        raw.get("running") == "1",
        float(raw.get("seconds_per_day", settings.REPLAY_SECONDS_PER_DAY)),
        float(raw.get("stepped_at", 0)),
        settings.REPLAY_END,
        float(raw.get("resumed_at", 0)),
    )


def today() -> date | None:
    """The last trading day whose bar may be served (None: live, no cut)."""
    return state().today


def market_today() -> date:
    """The clock's day: the replay's date, or the wall clock's in live mode."""
    return today() or timezone.localdate()


def day_began() -> datetime | None:
    """When a replay's current day began (None: live); answers from before saw older bars."""
    clock = state()
    if clock.mode != REPLAY:
        return None
    return datetime.fromtimestamp(clock.stepped_at, tz=UTC)


def next_trading_day(day: date, days: int = 1) -> date:
    """`days` weekdays after `day` (exchange holidays are not modelled; a holiday simply
    brings no new bar)."""
    moved = np.busday_offset(np.datetime64(day, "D"), days, roll="forward")
    return date.fromisoformat(str(moved))


def due(now: float | None = None) -> bool:
    """A running replay whose day has lasted REPLAY_SECONDS_PER_DAY."""
    clock = state()
    if clock.mode != REPLAY or not clock.running:
        return False
    if clock.end is not None and clock.today is not None and clock.today >= clock.end:
        return False
    began = max(clock.stepped_at, clock.resumed_at)
    return (now or time.time()) - began >= clock.seconds_per_day


class ClockError(ValueError):
    """An operator's clock command that cannot be done, with the reason in a sentence."""


def step(days: int = 1) -> date | None:
    """Move the replay forward `days` trading days; the new date, or None if another
    process moved it first (or the replay is at its end)."""
    clock = state()
    if clock.mode != REPLAY or clock.today is None:
        raise ClockError("The market clock is live: it follows the wall clock and cannot step.")
    if days < 1:
        raise ClockError("A step moves the clock forward by at least one trading day.")
    new = next_trading_day(clock.today, days)
    if clock.end is not None and new > clock.end:
        if clock.today >= clock.end:
            return None
        new = clock.end
    moved = script(_STEP)([KEY], [clock.today.isoformat(), new.isoformat(), repr(time.time())])
    return new if moved else None


def set_running(running: bool) -> ClockState:
    _require_replay()
    _ensure()
    get_redis().hset(
        KEY, mapping={"running": "1" if running else "0", "resumed_at": repr(time.time())}
    )
    return state()


def set_speed(seconds_per_day: float) -> ClockState:
    _require_replay()
    if not 0.1 <= seconds_per_day <= 86400:
        raise ClockError("A replay day lasts from 0.1 to 86400 seconds.")
    _ensure()
    get_redis().hset(KEY, "seconds_per_day", repr(float(seconds_per_day)))
    return state()


def set_date(day: date) -> ClockState:
    """Jump the replay to a date (forward or back: scores already made stay as they are)."""
    _require_replay()
    _ensure()
    get_redis().hset(KEY, mapping={"date": day.isoformat(), "stepped_at": repr(time.time())})
    return state()


def _require_replay() -> None:
    if not is_replay():
        raise ClockError("The market clock is live: only a replay can be started, paused or set.")
