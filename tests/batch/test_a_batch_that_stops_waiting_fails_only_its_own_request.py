"""A batch that stops waiting for a pair (`--timeout`) writes it as failed with its reason
and stops answering for it, but fails only what is its own: a request it leads that
another client joined goes on and ends done for that client (the batch's place no longer
counts against the batch); one nobody else follows is failed with the batch's reason and
its place is free. predict_batch runs as its own process; the suite's worker takes no io
task until the batch has given up."""

from __future__ import annotations

import csv
import os
import subprocess
from pathlib import Path

import pytest
from celery import current_app

from launch import process_catalog
from plumbing.redis_client import get_redis
from predictions import admission, gate
from predictions.models import PredictionRequest
from tests.support.processes import ROOT, database_url_for_workers
from tests.support.waiting import eventually

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]


def start_batch(out: Path, symbol: str, timeout_s: int) -> subprocess.Popen[str]:
    argv = process_catalog.manage("predict_batch", "--symbols", symbol, "--horizons", "2").argv()
    argv += ["--strategy", "chord", "--timeout", str(timeout_s), "--out", str(out), "--quiet"]
    env = {**os.environ, "DATABASE_URL": database_url_for_workers()}
    return subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)


def its_request(symbol: str) -> PredictionRequest:
    return eventually(
        lambda: PredictionRequest.objects.filter(symbol=symbol, answered_by=None).first(),
        60,
        f"the batch's request for {symbol}",
        0.05,
    )


def written(out: Path) -> list[dict[str, str]]:
    with out.open(newline="") as f:
        return list(csv.DictReader(f))


def place_of(request: PredictionRequest) -> tuple[float | None, bytes | None]:
    """(its score among the service's places, its owner)."""
    redis = get_redis()
    request_id = str(request.id)
    return redis.zscore(admission.IN_FLIGHT_KEY, request_id), redis.hget(
        admission.OWNERS_KEY, request_id
    )


def test_a_request_another_client_joined_goes_on_and_ends_done_for_it(
    celery_worker, io_paused, tmp_path
):
    out = tmp_path / "forecasts.csv"
    batch = start_batch(out, "MSFT", timeout_s=10)
    leader = its_request("MSFT")
    assert place_of(leader)[1] is not None  # the batch answers for its place
    joined = gate.ask(gate.Question("MSFT", 2, "chord"), gate.Client("anon:198.51.100.7"))
    assert isinstance(joined, gate.Queued) and joined.joined
    follower = joined.request

    assert batch.wait(timeout=60) == 1  # a failed pair: the command says so
    [row] = written(out)
    assert row["status"] == "failed" and row["prediction_id"] == str(leader.id)
    assert row["error"] == "The batch stopped waiting for it after 10 s."
    leader.refresh_from_db()
    follower.refresh_from_db()
    assert leader.status == "queued" and follower.status == "queued"
    in_flight, owner = place_of(leader)
    assert in_flight is not None and owner is None  # still a place, no longer the batch's

    current_app.control.add_consumer("io", destination=[celery_worker], reply=True, timeout=10)
    eventually(
        lambda: PredictionRequest.objects.get(id=follower.id).status in ("done", "failed"),
        180,
        "the follower's request ending",
        0.2,
    )
    follower.refresh_from_db()
    assert follower.status == "done", follower.error
    assert PredictionRequest.objects.get(id=leader.id).status == "done"
    assert place_of(leader) == (None, None)


def test_a_request_nobody_else_follows_is_failed_and_its_place_freed(
    celery_worker, io_paused, tmp_path
):
    out = tmp_path / "forecasts.csv"
    batch = start_batch(out, "GOOG", timeout_s=2)
    request = its_request("GOOG")
    assert place_of(request)[0] is not None

    assert batch.wait(timeout=60) == 1
    [row] = written(out)
    reason = "The batch stopped waiting for it after 2 s."
    assert (row["status"], row["error"]) == ("failed", reason)
    assert row["prediction_id"] == str(request.id)
    request.refresh_from_db()
    assert (request.status, request.error) == ("failed", reason)
    assert place_of(request) == (None, None)
