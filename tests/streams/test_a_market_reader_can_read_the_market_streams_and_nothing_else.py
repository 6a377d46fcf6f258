"""`manage.py market_readers add NAME` prints a URL whose Redis user can follow a symbol
with `MarketFeed` (read `stockserve:market:*`) and can do nothing else: not write those
streams, not read the broker, the cache or a stream client's keys. Before, MarketFeed needed
the service's full Redis credentials. Real Redis 7 ACLs."""

from __future__ import annotations

import io

import pytest
import redis
from django.core.management import call_command
from stockserve_client.market import BAR, MarketFeed, market_stream

from marketdata import market_events
from plumbing.redis_client import get_redis

pytestmark = pytest.mark.postgres


@pytest.fixture
def reader_url():
    out = io.StringIO()
    call_command("market_readers", "add", "dashboards", stdout=out, stderr=io.StringIO())
    url = next(line for line in out.getvalue().splitlines() if line.startswith("redis://"))
    yield url
    call_command("market_readers", "remove", "dashboards", stdout=io.StringIO(),
                 stderr=io.StringIO())  # fmt: skip
    get_redis().delete(market_stream("ZZRD"))


def test_it_follows_a_symbol(reader_url):
    feed = MarketFeed(reader_url, "zzrd")
    market_events.bar("ZZRD", "2013-01-03", 12.5)
    events = feed.updates(block_ms=1000)
    assert [(e.kind, e.symbol, e.data["close"]) for e in events] == [(BAR, "ZZRD", 12.5)]
    out = io.StringIO()
    call_command("market_readers", "list", stdout=out)
    assert '"dashboards"' in out.getvalue()


@pytest.mark.parametrize(
    "attempt",
    [
        lambda r: r.xadd(market_stream("ZZRD"), {"event": "{}"}),  # a forged event
        lambda r: r.delete(market_stream("ZZRD")),
        lambda r: r.lrange("celery", 0, -1),  # the broker's queue
        lambda r: r.get("stockserve:answer:AAPL:5"),  # the cache
        lambda r: r.xrange("stockserve:queue:input"),  # the queue's questions
        lambda r: r.keys("*"),
    ],
    ids=["xadd", "del", "broker", "cache", "queue", "keys"],
)
def test_everything_else_is_refused(reader_url, attempt):
    with pytest.raises(redis.exceptions.NoPermissionError):
        attempt(redis.Redis.from_url(reader_url))
