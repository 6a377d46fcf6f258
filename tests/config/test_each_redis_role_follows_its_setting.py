"""Each role of Redis is reached through its own setting: the accessors, the queue depths
the autoscaler reads, the epoch the sweeper compares and the settings' defaults."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from django.conf import settings as django_settings

from plumbing import redis_client
from plumbing.redis_client import broker_redis, get_redis, results_redis
from streams.stream_redis import get_queue_redis
from workers import queue_wait

ROLE_DBS = {"REDIS_URL": 11, "CELERY_BROKER_URL": 12, "CELERY_RESULT_BACKEND": 13}


def db_of(client) -> int:
    return int(client.connection_pool.connection_kwargs["db"])


@pytest.fixture
def split_roles(settings):
    """The suite's Redis, one database per role: as apart as separate servers for keys."""
    base = django_settings.REDIS_URL.rsplit("/", 1)[0]
    for name, db in ROLE_DBS.items():
        setattr(settings, name, f"{base}/{db}")
    settings.QUEUE_REDIS_URL = f"{base}/14"
    get_redis.cache_clear()
    clients = [get_redis(), broker_redis(), results_redis(), get_queue_redis()]
    for client in clients:
        client.flushdb()
    redis_client._epoch = None
    yield
    for client in clients:
        client.flushdb()
    get_redis.cache_clear()
    redis_client._epoch = None


def test_each_accessor_talks_to_its_roles_redis(split_roles):
    assert db_of(get_redis()) == 11
    assert db_of(broker_redis()) == 12
    assert db_of(results_redis()) == 13
    assert db_of(get_queue_redis()) == 14
    assert len({db_of(client) for client in redis_client.prediction_redises()}) == 3


def test_queue_depths_are_read_in_the_brokers_redis_and_waits_in_our_own(split_roles):
    broker_redis().lpush("gpu", json.dumps({"headers": {"sent_at": 100.0}}))
    get_redis().lpush("stockserve:queue-waits:gpu", json.dumps([109.0, 2.5]))
    state = queue_wait.current(["gpu"], now=110.0)["gpu"]
    assert state.depth == 1 and state.oldest_wait == 10.0
    assert state.recent_p95 == 2.5 and state.started == 1
    assert get_redis().llen("gpu") == 0


def test_the_epoch_changes_when_the_broker_or_the_result_backend_forgets(split_roles):
    first = redis_client.epoch()
    assert len(first) == 32
    assert get_redis().exists(redis_client.EPOCH_KEY) == 0  # not our own Redis's to lose
    for forgetful in (broker_redis(), results_redis()):
        before = redis_client.epoch()
        forgetful.flushdb()
        redis_client._epoch = None
        assert redis_client.epoch() != before


def test_one_redis_for_both_keeps_its_own_epoch():
    """Unsplit, the epoch is that Redis's marker, as before the roles could be split."""
    redis_client._epoch = None
    try:
        assert redis_client.epoch() == redis_client.text(broker_redis().get(redis_client.EPOCH_KEY))
    finally:
        redis_client._epoch = None


def settings_under(env: dict[str, str]) -> dict[str, str]:
    """config/settings.py read afresh in a process with this environment."""
    code = (
        "import json; from config import settings as s; print(json.dumps({"
        "'broker': s.CELERY_BROKER_URL, 'results': s.CELERY_RESULT_BACKEND, "
        "'queue': s.QUEUE_REDIS_URL, 'layer': s.CHANNEL_LAYERS['default']['CONFIG']"
        "['hosts'][0]['address'], 'cache': s.CACHES['default']['LOCATION']}))"
    )
    names = ("CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "QUEUE_REDIS_URL",
             "CHANNEL_LAYER_REDIS_URL")  # fmt: skip
    base = {k: v for k, v in os.environ.items() if k not in names}
    out = subprocess.run(
        [sys.executable, "-c", code], env={**base, **env}, capture_output=True, text=True,
        check=True, timeout=60,
    )  # fmt: skip
    return dict(json.loads(out.stdout.splitlines()[-1]))


def test_every_role_defaults_to_redis_url_and_follows_its_own_setting():
    main = "redis://127.0.0.1:7001/0"
    assert set(settings_under({"REDIS_URL": main}).values()) == {main}
    split = settings_under({
        "REDIS_URL": main,
        "CELERY_BROKER_URL": "redis://127.0.0.1:7002/0",
        "CELERY_RESULT_BACKEND": "redis://127.0.0.1:7003/0",
        "QUEUE_REDIS_URL": "redis://127.0.0.1:7004/0",
        "CHANNEL_LAYER_REDIS_URL": "redis://127.0.0.1:7005/0",
    })  # fmt: skip
    assert split == {
        "broker": "redis://127.0.0.1:7002/0",
        "results": "redis://127.0.0.1:7003/0",
        "queue": "redis://127.0.0.1:7004/0",
        "layer": "redis://127.0.0.1:7005/0",
        "cache": main,
    }
