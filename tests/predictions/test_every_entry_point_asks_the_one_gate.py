"""REST, TF Serving, the stream consumer, batch and the watchlist all ask `predictions.gate.ask`:
the same question gets the same answer, joins the same leader and meets the same
admission decision whichever way it came in (the fast path serves the gate's own bytes).

The watchlist asks only questions whose answer is stale and that nobody is answering, so
it never gets a cached answer or joins; it asks the same gate, exempt from admission by an
argument."""

from __future__ import annotations

import json

import pytest
from stockserve_client import protocol

from batch.runner import BatchRunner
from market import watchlist
from plumbing.redis_client import get_redis
from predictions import admission, gate
from predictions.models import PredictionRequest
from streams.stream_consumer import StreamConsumer
from tests.support import wsgi
from tests.support.api import finished_prediction
from tests.support.queue import clear_queue

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]
URL = "/api/v1/predictions/"
QUESTION = {"symbol": "AAPL", "horizon": 2}


@pytest.fixture(autouse=True)
def _empty_stream():
    clear_queue()
    yield
    clear_queue()


def answered() -> PredictionRequest:
    """AAPL h=2, finished just now, with a forecast every protocol can show."""
    return finished_prediction(
        "AAPL",
        2,
        forecast_dates=["2013-03-04", "2013-03-05"],
        combined={
            "forecast": [431.0, 432.0],
            "interval": {"level": 0.8, "lower": [420.0] * 2, "upper": [440.0] * 2},
            "unsure": False,
        },
        models=[{"model": "naive", "ok": True, "forecast": [430.0] * 2}],
    )


def via_rest(api_client) -> tuple[int, dict]:
    response = api_client.post(URL, QUESTION, format="json", REMOTE_ADDR="10.1.0.1")
    return response.status_code, response.json()


def via_tfserving(client) -> tuple[int, dict]:
    body = {"instances": [QUESTION]}
    response = client.post("/v1/models/ensemble:predict", body, content_type="application/json")
    return response.status_code, response.json()


def via_stream(request_id: str) -> tuple[StreamConsumer, dict | None]:
    """One step of an in-process consumer; the answer it wrote, if it wrote one."""
    redis = get_redis()
    redis.xadd(protocol.INPUT_STREAM, {"request_id": request_id, "symbol": "AAPL", "horizon": 2})
    consumer = StreamConsumer(f"gate-test-{request_id}")
    consumer.step(block_ms=100)
    written = redis.get(protocol.answer_key(request_id))
    return consumer, json.loads(written) if written else None


def via_batch(timeout_s: float = 0.0) -> tuple[BatchRunner, list[dict]]:
    rows: list[dict] = []
    runner = BatchRunner("chord", rows.extend, in_flight=1, fresh=False, timeout_s=timeout_s)
    runner.run([("AAPL", 2)])
    return runner, rows


def test_a_cached_answer_is_the_same_prediction_through_every_entry_point(api_client, client):
    answer = str(answered().id)
    rows = PredictionRequest.objects.count()

    rest_status, rest = via_rest(api_client)
    tf_status, tf = via_tfserving(client)
    _consumer, streamed = via_stream("cached-1")
    batch, batch_rows = via_batch()

    assert (rest_status, rest["id"], rest["cache_hit"]) == (200, answer, True)
    assert (tf_status, tf["predictions"][0]["request_id"]) == (200, answer)
    assert streamed is not None and streamed["prediction_id"] == answer
    assert batch.tally.from_cache == 1 and {r["prediction_id"] for r in batch_rows} == {answer}
    assert PredictionRequest.objects.count() == rows  # a cached answer creates nothing
    # The fast path, before Django, serves the very bytes the gate's answer renders to.
    assert (
        wsgi.call("POST", URL, QUESTION).body
        == api_client.post(URL, QUESTION, format="json").content
    )


def test_a_question_in_flight_is_joined_through_every_entry_point(api_client, client, settings):
    settings.TFSERVING_MAX_WAIT = 0  # answer "still being computed" at once
    leader = PredictionRequest.queued(
        symbol="AAPL", horizon=2, strategy=settings.DEFAULT_STRATEGY, joinable=True
    )
    leader.save()

    rest_status, rest = via_rest(api_client)
    tf_status, tf = via_tfserving(client)
    consumer, streamed = via_stream("joined-1")
    via_batch(timeout_s=0.0)

    assert rest_status == 202
    assert tf_status == 503 and "Still being computed" in tf["error"]
    assert streamed is None and len(consumer.held) == 1
    followers = PredictionRequest.objects.filter(answered_by=leader)
    assert followers.count() == 4  # REST, TF Serving, the stream and the batch, one each
    assert {str(f.id) for f in followers} >= {
        rest["id"],
        *(h.prediction_id for h in consumer.held.values()),
    }
    assert sum(str(f.id) in tf["error"] for f in followers) == 1  # TF Serving's follower


def test_at_capacity_every_entry_point_meets_the_same_refusal(api_client, client, settings):
    settings.ADMISSION_MAX_IN_FLIGHT = 1
    deadline = PredictionRequest.queued(symbol="IBM", horizon=3).deadline.timestamp()
    # An identified client holds the one place: an anonymous one would not keep the
    # stream, batch or watchlist clients out (they would be admitted past the limit).
    assert admission.admit("someone-else", "user:elsewhere", deadline, 1).admitted
    before = PredictionRequest.objects.count()

    rest_status, rest = via_rest(api_client)
    tf_status, tf = via_tfserving(client)
    _consumer, streamed = via_stream("refused-1")
    batch = BatchRunner("chord", list, in_flight=1, fresh=False, timeout_s=1.0)
    batched = batch._start(("AAPL", 2))  # run() would wait its Retry-After and ask again

    busy = "The service is at capacity (1 predictions in progress)"
    assert rest_status == 503 and busy in rest["error"]
    assert tf_status == 503 and busy in tf["error"]
    assert streamed is not None and streamed["status"] == protocol.REFUSED
    assert busy in streamed["error"]
    assert isinstance(batched, gate.Refused) and busy in batched.reason
    assert PredictionRequest.objects.count() == before  # a refusal creates nothing
    # The watchlist is a client of the same gate and meets the same refusal.
    outcome = gate.ask(gate.Question("MSFT", 3, cached=False), watchlist.client())
    assert isinstance(outcome, gate.Refused) and busy in outcome.reason
    assert PredictionRequest.objects.count() == before
