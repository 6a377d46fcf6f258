"""When a newer prediction for the same question finishes, the stored answer gives way."""

from __future__ import annotations

import pytest

from api import answers
from predictions import answer_cache
from tests.support.api import finished_prediction

URL = "/api/v1/predictions/"
pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def ask(api_client) -> str:
    response = api_client.post(URL, {"symbol": "AAPL", "horizon": 5}, format="json")
    assert response.status_code == 200
    return response.json()["id"]


def test_the_newer_prediction_answers_once_it_supersedes_the_old(api_client):
    old = finished_prediction("AAPL", 5)
    assert ask(api_client) == str(old.id)
    new = finished_prediction("AAPL", 5)
    answer_cache.supersede("AAPL", 5, new.finished_at.timestamp())  # as the worker does
    assert ask(api_client) == str(new.id)


def test_a_late_render_of_the_old_prediction_cannot_overwrite_the_new(api_client):
    old = finished_prediction("AAPL", 5)
    new = finished_prediction("AAPL", 5)
    answer_cache.supersede("AAPL", 5, new.finished_at.timestamp())
    stored = answer_cache.store(
        "AAPL", 5, answers.render(old, cached=True), old.finished_at.timestamp(), ttl=60
    )
    assert stored is False
    assert ask(api_client) == str(new.id)


def test_an_older_prediction_ending_late_never_lowers_the_version(api_client):
    old = finished_prediction("AAPL", 5)
    new = finished_prediction("AAPL", 5)
    answer_cache.supersede("AAPL", 5, new.finished_at.timestamp())
    answer_cache.supersede("AAPL", 5, old.finished_at.timestamp())  # its final step came last
    render = answers.render(old, cached=True)
    assert not answer_cache.store("AAPL", 5, render, old.finished_at.timestamp(), ttl=60)
    assert ask(api_client) == str(new.id)
