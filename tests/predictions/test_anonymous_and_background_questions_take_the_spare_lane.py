"""The lane is chosen when a request is made: anonymous clients' questions and the
service's own (the watchlist, model health's retraining) take the spare lane, every
identified client's the usual one, and the row keeps it for every stage and a dispatch
again by the sweeper."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from market import tasks, watchlist
from predictions import gate
from predictions.gate import Client, Question, Queued
from predictions.models import Lane, PredictionRequest

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def lane_of(client: Client, symbol: str) -> str:
    outcome = gate.ask(Question(symbol, 5, cached=False, joinable=False), client)
    assert isinstance(outcome, Queued), outcome
    return PredictionRequest.objects.get(id=outcome.request.id).lane


def test_anonymous_and_background_questions_take_the_spare_lane_identified_ones_the_usual(
    settings,
):
    settings.ADMISSION_MAX_IN_FLIGHT = 20  # room for every client's question
    user = get_user_model().objects.create_user("alice")
    spare = {
        "anonymous": lane_of(Client("anon:203.0.113.7"), "AAPL"),
        "anonymous /64": lane_of(Client("anon:2001:db8:1:2::"), "MSFT"),
        "watchlist": lane_of(watchlist.client(), "GOOG"),
        "model health": lane_of(tasks.HEALTH, "IBM"),
    }
    usual = {
        "account": lane_of(Client(f"user:{user.pk}", user), "AAPL"),
        "stream client": lane_of(Client("stream:orders"), "MSFT"),
        "batch host": lane_of(Client("batch:host1"), "GOOG"),
    }
    assert spare == dict.fromkeys(spare, Lane.SPARE)
    assert usual == dict.fromkeys(usual, Lane.USUAL)
