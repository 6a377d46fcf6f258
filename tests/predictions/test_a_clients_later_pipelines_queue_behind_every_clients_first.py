"""Fair queueing at the broker: a client's first pipeline goes first, its second behind
every identified client's first, its later ones behind those; an anonymous client's one
step further back. Without it a client holding many places, or two anonymous addresses at
their rate limit, kept a client asking once waiting behind all of their pipelines."""

from __future__ import annotations

import pytest

from predictions import admission, signatures
from predictions.models import PredictionRequest

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def test_a_clients_later_places_and_anonymous_ones_wait_behind_identified_first_ones():
    ranks = {
        (client, place): admission.queue_rank(client, place)
        for client in ("user:7", "stream:orders", "watchlist", "anon:203.0.113.7")
        for place in (1, 2, 3, 5)
    }
    assert [ranks["user:7", p] for p in (1, 2, 3, 5)] == [0, 1, 2, 2]
    assert ranks["stream:orders", 1] == ranks["watchlist", 1] == 0
    assert [ranks["anon:203.0.113.7", p] for p in (1, 2, 3)] == [1, 2, 2]

    first = PredictionRequest.queued(symbol="AAPL", horizon=5, strategy="chord")
    second = PredictionRequest.queued(symbol="MSFT", horizon=5, strategy="chord")
    later = PredictionRequest.queued(symbol="IBM", horizon=5, strategy="chord", precomputed=True)
    second.queue_rank, later.queue_rank = 1, 2
    assert "priority" not in signatures.fetch_prices(first).options  # Celery's default, 0
    assert "priority" not in signatures.callback("x", first).options
    for sig in (signatures.fetch_prices(second), signatures.callback("x", second)):
        assert sig.options["priority"] == 3
    assert signatures.model_task(later, "ridge", "k").options["priority"] == 6
