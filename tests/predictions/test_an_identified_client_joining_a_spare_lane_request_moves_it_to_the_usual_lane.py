"""An identified client who joins a spare-lane request in flight waits for it like any of
its own, so the request's tasks from then on take the usual lane; an anonymous client
joining leaves it where it is, and never moves a usual-lane request to the spare one."""

from __future__ import annotations

import pytest

from predictions import gate
from predictions.gate import Client, Question, Queued
from predictions.models import Lane, PredictionRequest

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def ask(client: Client, symbol: str) -> Queued:
    outcome = gate.ask(Question(symbol, 5, cached=False), client)
    assert isinstance(outcome, Queued), outcome
    return outcome


def lane(request: PredictionRequest) -> str:
    return PredictionRequest.objects.get(id=request.id).lane


def test_a_join_by_an_identified_client_moves_the_leader_to_the_usual_lane():
    anonymous, other = Client("anon:203.0.113.7"), Client("anon:198.51.100.9")
    leader = ask(anonymous, "AAPL").request
    assert lane(leader) == Lane.SPARE

    assert ask(other, "AAPL").joined
    assert lane(leader) == Lane.SPARE

    assert ask(Client("stream:orders"), "AAPL").joined
    assert lane(leader) == Lane.USUAL

    identified = ask(Client("stream:orders"), "MSFT").request
    assert ask(anonymous, "MSFT").joined
    assert lane(identified) == Lane.USUAL
