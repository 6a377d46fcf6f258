"""Loaded with `-p tests.plugin` before Django's settings, so the suite owns its services.

Starts a private redis-server (unless TEST_REDIS_URL names one), a private PostgreSQL
cluster when TEST_DATABASE=postgres, and points every setting that could reach the
internet at the offline providers.
"""

from __future__ import annotations

import os

from devstack.postgres import ThrowawayPostgres
from devstack.redis import EmbeddedRedis

_redis: EmbeddedRedis | None = None

if os.environ.get("TEST_REDIS_URL"):
    os.environ["REDIS_URL"] = os.environ["TEST_REDIS_URL"]
else:
    _redis = EmbeddedRedis().start()
    os.environ["REDIS_URL"] = _redis.url

os.environ.setdefault("TEST_SQLITE_NAME", f"test-db-{os.getpid()}.sqlite3")
# TEST_DATABASE=postgres: the suite runs on a throwaway PostgreSQL cluster of its own
# (`make test` runs the database-heavy tests a second time that way).
_postgres: ThrowawayPostgres | None = None
if os.environ.get("TEST_DATABASE") == "postgres":
    _postgres = ThrowawayPostgres().start()
    os.environ["DATABASE_URL"] = _postgres.url
os.environ.pop("CELERY_BROKER_URL", None)
os.environ.pop("CELERY_RESULT_BACKEND", None)
os.environ.setdefault("PRICE_PROVIDERS", "sample")
os.environ.setdefault("MENTION_PROVIDERS", "sample")
os.environ.setdefault("PRECOMPUTE_SYMBOLS", "")  # tests that want a watchlist set one
# The cheap models, in this process and every worker it starts: the deep ones (TensorFlow)
# cost most of the suite's CPU when every test trains them. The tests of the shipped five
# (end to end, the strategies, deep batching, the deep models' own) name them.
os.environ.setdefault("PREDICTION_MODELS", "naive,ridge,arima")
os.environ.setdefault("THROTTLE_ANON", "10000/min")
os.environ.setdefault("THROTTLE_USER", "10000/min")
os.environ.setdefault("THROTTLE_EXPENSIVE", "10000/min")
# Each test starts with an empty database while the processes live on: nothing kept from
# an earlier test's rows (a test of the per-process lookups sets its own).
os.environ.setdefault("LOOKUP_CACHE_SECONDS", "0")
# The suite keeps the machine's cores busy with other tests: a spare-lane task would wait
# out SPARE_YIELD_SECONDS at every start (its own test sets it).
os.environ.setdefault("SPARE_YIELD_SECONDS", "0")
# The stacks the tests start prove behaviour, not throughput: two web processes each, not
# make run's two per core (each one's start is CPU the other tests wait for).
os.environ.setdefault("WEB_CONCURRENCY", "2")
# Playwright's sync API keeps an event loop on the test thread; the ORM calls it makes
# from there are still synchronous.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def pytest_unconfigure(config: object) -> None:
    if _redis is not None:
        _redis.stop()
    if _postgres is not None:
        _postgres.stop()
