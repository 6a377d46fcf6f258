"""Fresh runs and retraining, the most expensive requests, need an account and count apart."""

from __future__ import annotations

import pytest

URL = "/api/v1/predictions/"
pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


@pytest.mark.parametrize("option", ["use_cache", "warm_start"])
def test_an_anonymous_client_is_refused_with_a_sentence(api_client, option):
    response = api_client.post(URL, {"symbol": "AAPL", option: False}, format="json")
    assert response.status_code == 403
    assert "need an account" in response.json()["error"]


def test_a_signed_in_client_gets_them_within_its_own_rate(api_client, settings, django_user_model):
    rest = dict(settings.REST_FRAMEWORK)
    rest["DEFAULT_THROTTLE_RATES"] = {**rest["DEFAULT_THROTTLE_RATES"], "expensive": "2/min"}
    settings.REST_FRAMEWORK = rest
    settings.ADMISSION_MAX_IN_FLIGHT = 100
    api_client.force_authenticate(django_user_model.objects.create_user("quant"))
    codes = [
        api_client.post(URL, {"symbol": "AAPL", "horizon": h, "use_cache": False}, format="json")
        for h in (1, 2, 3)
    ]
    assert [c.status_code for c in codes] == [202, 202, 429]
    assert int(codes[2]["Retry-After"]) >= 1
    cheap = api_client.post(URL, {"symbol": "AAPL", "horizon": 4}, format="json")
    assert cheap.status_code == 202  # plain requests do not count against it


def test_a_private_stack_may_allow_them_anonymously(api_client, settings):
    settings.ANONYMOUS_FRESH_RUNS = True
    response = api_client.post(URL, {"symbol": "AAPL", "use_cache": False}, format="json")
    assert response.status_code == 202
