"""Under DEPLOYMENT=production a system check warns (workers.W001) when the queue
interface has no Redis of its own (QUEUE_REDIS_URL unset, or the same as REDIS_URL): one
client filling it would stop the broker. With a Redis of its own, or in development, it
says nothing."""

from __future__ import annotations

from streams.stream_redis import queue_redis_check


def test_production_with_the_queue_in_the_main_redis_warns(settings):
    settings.DEPLOYMENT = "production"
    settings.QUEUE_REDIS_URL = settings.REDIS_URL
    [warning] = queue_redis_check()
    assert warning.id == "workers.W001" and "QUEUE_REDIS_URL" in warning.msg


def test_a_queue_redis_of_its_own_or_development_is_quiet(settings):
    settings.DEPLOYMENT = "production"
    settings.QUEUE_REDIS_URL = "redis://127.0.0.1:6380/0"
    assert queue_redis_check() == []
    settings.DEPLOYMENT, settings.QUEUE_REDIS_URL = "development", settings.REDIS_URL
    assert queue_redis_check() == []
