"""Prometheus /metrics: exact totals from every process's events, gauges read at scrape."""

from __future__ import annotations

import datetime as dt
import uuid
from types import SimpleNamespace

import pytest
from prometheus_client.parser import text_string_to_metric_families

from plumbing import event_metrics
from plumbing.event_metrics import METRICS_KEY
from plumbing.redis_client import broker_redis, get_redis
from predictions import progress
from tests.support.waiting import eventually

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def scrape(client, **headers) -> dict[tuple[str, tuple], float]:
    from django.conf import settings

    headers.setdefault("HTTP_AUTHORIZATION", f"Bearer {settings.METRICS_TOKEN}")
    response = client.get("/metrics", **headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain")
    samples = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def fake_request(created_seconds_ago: float) -> SimpleNamespace:
    created = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=created_seconds_ago)
    return SimpleNamespace(
        id=uuid.uuid4(),
        symbol="AAPL",
        horizon=5,
        strategy="chord",
        created_at=created,
    )


def stage(name: str, queue: str, ms: float, outcome: str = "ok") -> dict:
    return {
        "stage": name,
        "started_at": 0.0,
        "finished_at": ms / 1000,
        "duration_ms": ms,
        "worker": f"{queue}@h",
        "queue": queue,
        "pid": 1,
        "outcome": outcome,
    }


def test_it_exposes_latency_stage_durations_cache_and_errors(client):
    event_metrics.flush()  # earlier tests' counts, not this one's
    get_redis().delete(METRICS_KEY)
    slow = fake_request(created_seconds_ago=3.0)
    progress.publish_request("submitted", slow)
    progress.record_stage(str(slow.id), stage("model:ridge", "cpu", 150.0))
    progress.record_stage(str(slow.id), stage("model:ridge", "cpu", 40.0))
    progress.record_stage(str(slow.id), stage("sentiment", "io", 8.0, outcome="error"))
    progress.publish_request("done", slow)
    pipe = get_redis().pipeline()
    event_metrics.count_cache_miss(pipe)  # as the gate counts a question it queued
    event_metrics.count_cache_hit(pipe)  # as a cached answer counts itself
    pipe.execute()
    progress.publish_request("failed", fake_request(400.0), error="deadline")

    m = scrape(client)
    ridge = (("queue", "cpu"), ("stage", "model:ridge"))
    assert m[("stockserve_stage_duration_seconds_count", ridge)] == 2
    assert m[("stockserve_stage_duration_seconds_bucket", (("le", "0.05"), *ridge))] == 1
    assert m[("stockserve_stage_duration_seconds_bucket", (("le", "0.25"), *ridge))] == 2
    assert m[("stockserve_stage_duration_seconds_sum", ridge)] == pytest.approx(0.19)
    sentiment = (("queue", "io"), ("stage", "sentiment"))
    assert m[("stockserve_stage_errors_total", sentiment)] == 1
    latency = "stockserve_prediction_latency_seconds_bucket"
    assert m[(latency, (("le", "2"), ("outcome", "done")))] == 0
    assert m[(latency, (("le", "5"), ("outcome", "done")))] == 1
    assert m[(latency, (("le", "+Inf"), ("outcome", "failed")))] == 1
    assert m[("stockserve_cache_lookups_total", (("result", "hit"),))] == 1
    assert m[("stockserve_cache_lookups_total", (("result", "miss"),))] == 1
    for event, count in (("submitted", 1), ("cached", 1), ("done", 1), ("failed", 1)):
        assert m[("stockserve_predictions_total", (("event", event),))] == count
    assert m[("stockserve_prediction_errors_total", ())] == 1


def test_queue_depths_count_every_priority_list(client):
    redis = broker_redis()
    before = scrape(client)[("stockserve_queue_depth", (("queue", "gpu"),))]  # another test's
    redis.rpush("gpu", b"x", b"y")
    redis.rpush("gpu\x06\x163", b"z")
    try:
        m = scrape(client)
    finally:
        redis.lrem("gpu", 0, b"x")
        redis.lrem("gpu", 0, b"y")
        redis.lrem("gpu\x06\x163", 0, b"z")
    assert m[("stockserve_queue_depth", (("queue", "gpu"),))] == before + 3
    assert ("stockserve_workers_online", ()) in m


def test_a_scrape_needs_the_token_or_a_staff_session(client, settings, django_user_model):
    settings.METRICS_TOKEN = "s3cret"
    refused = client.get("/metrics")
    assert refused.status_code == 401
    assert "Bearer" in refused.json()["error"]
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    scrape(client, HTTP_AUTHORIZATION="Bearer s3cret")
    client.force_login(django_user_model.objects.create_user("viewer"))
    assert client.get("/metrics").status_code == 401  # signed in, but not staff
    client.force_login(django_user_model.objects.create_user("ops", is_staff=True))
    assert client.get("/metrics").status_code == 200


def test_debug_leaves_metrics_open(client, settings):
    settings.DEBUG = True
    assert client.get("/metrics").status_code == 200


def test_only_get_is_answered(client):
    response = client.post("/metrics")
    assert response.status_code == 405
    assert response.json()["status"] == 405


def test_a_process_sends_its_counts_summed_once_a_second_and_the_tail_by_itself(monkeypatch):
    event_metrics.flush()
    get_redis().delete(METRICS_KEY)
    sent_increments = spy_on_this_process_increments(monkeypatch)
    for _ in range(50):  # fifty events within the second: counted here, not sent yet
        progress.record_stage("r", stage("model:naive", "cpu", 5.0))
    sent = get_redis().hgetall(METRICS_KEY)
    assert sent == {} or int(sent[b"stage|model:naive|cpu|0"]) < 50
    # No further event comes: the timer sends the rest, one command per field.
    eventually(lambda: stage_count("model:naive") == 50, 5, "the tail sent by the timer")
    assert sent_increments.count("stage|model:naive|cpu|0") <= 2  # at most twice: not 50


def spy_on_this_process_increments(monkeypatch) -> list[str]:
    """The hash fields this process increments, recorded on their way to the real Redis.

    Counted here rather than in Redis's command statistics, which other processes of the
    test session (a worker's own timer) also add to."""
    from redis.client import Pipeline

    fields: list[str] = []
    real_hincrby = Pipeline.hincrby

    def recording_hincrby(self, name, key, amount=1):
        if name == METRICS_KEY:
            fields.append(key)
        return real_hincrby(self, name, key, amount)

    monkeypatch.setattr(Pipeline, "hincrby", recording_hincrby)
    return fields


def stage_count(stage_name: str) -> int:
    return int(get_redis().hget(METRICS_KEY, f"stage|{stage_name}|cpu|0") or 0)  # <= 5 ms
