"""A burst of distinct requests beyond the bound: the accepted finish, the rest are refused."""

from __future__ import annotations

import pytest

from predictions import admission
from predictions.models import PredictionRequest, Status
from tests.support.api import finished_prediction, wait_until_final

URL = "/api/v1/predictions/"
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]


def test_every_accepted_request_finishes_and_the_rest_are_told_when_to_retry(
    staff_api_client, celery_worker, settings
):
    settings.ADMISSION_MAX_IN_FLIGHT = 3
    settings.ADMISSION_CLIENT_SHARE = 1.0
    finished_prediction("IBM", 9)
    burst = [
        staff_api_client.post(
            URL, {"symbol": "^IXIC", "horizon": h, "use_cache": False}, format="json"
        )
        for h in range(1, 9)
    ]
    accepted = [r.json() for r in burst if r.status_code == 202]
    refused = [r for r in burst if r.status_code == 503]
    assert len(accepted) == 3 and len(refused) == 5
    for response in refused:
        assert 1 <= int(response["Retry-After"]) <= 60
        assert "at capacity (3 predictions in progress)" in response.json()["error"]

    # Meanwhile a question already answered is served from the cache.
    cached = staff_api_client.post(URL, {"symbol": "IBM", "horizon": 9}, format="json")
    assert cached.status_code == 200 and cached.json()["cache_hit"] is True

    finished = [wait_until_final(staff_api_client, a["id"]) for a in accepted]
    assert [f["status"] for f in finished] == ["done"] * 3, [f["error"] for f in finished]
    for request in PredictionRequest.objects.filter(id__in=[a["id"] for a in accepted]):
        assert request.finished_at < request.deadline
    assert not PredictionRequest.objects.filter(status=Status.FAILED).exists()
    assert admission.in_flight() == 0
    body = {"symbol": "^IXIC", "horizon": 9, "use_cache": False}
    again = staff_api_client.post(URL, body, format="json")
    assert again.status_code == 202
    wait_until_final(staff_api_client, again.json()["id"])
