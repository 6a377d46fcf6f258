"""/healthz says the web process answers; /readyz that a prediction can be served now."""

from __future__ import annotations

import pytest

from plumbing.redis_client import get_redis
from tests.support.waiting import eventually
from workers import presence

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


@pytest.fixture
def no_workers(monkeypatch):
    """A heartbeat table of this test's own, whatever workers the suite runs."""
    monkeypatch.setattr(presence, "WORKERS_KEY", "stockserve:test-readiness-workers")
    get_redis().delete(presence.WORKERS_KEY)
    yield
    get_redis().delete(presence.WORKERS_KEY)


def heartbeat(name: str, queues: list[str], warm: int, concurrency: int, **more: object) -> None:
    presence.announce(
        {
            "hostname": name,
            "queues": queues,
            "concurrency": concurrency,
            "warm_processes": warm,
            **more,
        }
    )


def test_liveness_answers_anyone_and_only_reads(client):
    response = client.get("/healthz")
    assert response.status_code == 200 and response.json() == {"alive": True}
    assert response["Cache-Control"] == "no-store"
    assert client.post("/healthz").status_code == 405


def test_it_is_not_ready_without_a_worker_on_each_queue(client, no_workers, caplog):
    response = client.get("/readyz")
    assert response.status_code == 503 and response["Retry-After"] == "2"
    # A starting stack is probed every half second: "not ready" is not logged as an error.
    assert not [r for r in caplog.records if r.name == "django.request"]
    body = response.json()
    assert body["ready"] is False
    assert body["checks"]["database"] == body["checks"]["redis"] == "ok"
    assert body["checks"]["queues"] == {
        "io": "no live worker consumes it",
        "cpu": "no live worker consumes it",
    }


def test_it_is_ready_once_every_pool_process_is_warm(client, no_workers):
    heartbeat("io@a", ["io"], warm=1, concurrency=2)
    heartbeat("cpu@a", ["cpu"], warm=2, concurrency=2)
    body = client.get("/readyz").json()
    assert body["checks"]["queues"] == {"io": "warming up (1 of 2 processes)", "cpu": "ready"}

    heartbeat("io@a", ["io"], warm=2, concurrency=2)
    response = client.get("/readyz")
    assert response.status_code == 200 and response.json()["ready"] is True


def test_an_autoscaled_pool_is_ready_once_its_minimum_is_warm(client, no_workers):
    heartbeat("cpu@a", ["cpu"], warm=2, concurrency=2)
    # Celery reports the maximum as its concurrency; the pool starts at the minimum and may
    # be growing under load: the new processes warming up do not make it unready.
    heartbeat("io@a", ["io"], warm=1, concurrency=8, autoscale=[8, 2], processes=3)
    assert client.get("/readyz").json()["checks"]["queues"]["io"] == (
        "warming up (1 of 2 processes)"
    )
    heartbeat("io@a", ["io"], warm=2, concurrency=8, autoscale=[8, 2], processes=3)
    assert client.get("/readyz").status_code == 200


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_counts_its_pool_processes_warm(celery_worker):

    def warm() -> dict | None:
        worker = next(w for w in presence.alive_workers() if w["hostname"] == celery_worker)
        return worker if presence.is_ready(worker) else None

    worker = eventually(warm, 90, "the worker's pool warming up", 0.5)
    assert worker["warm_processes"] >= worker["concurrency"] == 2
