"""The HTTP client against Django's live server: waits for the real worker, honours
Retry-After a bounded number of times, and raises the service's own sentences."""

from __future__ import annotations

import pytest
from stockserve_client import BadRequest, Client, Refused, ServiceUnavailable

from tests.support.api import finished_prediction

pytestmark = pytest.mark.django_db(transaction=True)


def test_it_waits_for_a_prediction_the_worker_makes(live_server, celery_worker, django_user_model):
    from rest_framework.authtoken.models import Token

    token = Token.objects.create(user=django_user_model.objects.create_user("bot"))
    answer = Client(live_server.url, token.key).predict("^GSPC", 2, timeout=120)
    assert answer.ok and len(answer.forecast) == 2 and answer.prediction_id


def test_a_cached_answer_comes_back_at_once(live_server):
    cached = finished_prediction("IBM", 3)
    answer = Client(live_server.url).predict("IBM", 3)
    assert answer.prediction_id == str(cached.id) and answer.forecast == [431.0] * 3


def test_bad_input_raises_the_services_sentence(live_server):
    with pytest.raises(BadRequest, match="ZZZZ"):
        Client(live_server.url).predict("ZZZZ", 3)
    with pytest.raises(ValueError, match="horizon"):
        Client(live_server.url).predict("AAPL", 99)


def test_a_refusal_is_retried_after_its_retry_after_then_raised(live_server, settings):
    settings.ADMISSION_MAX_IN_FLIGHT = 1
    settings.ADMISSION_CLIENT_SHARE = 1.0
    from predictions import admission

    admission.admit("someone-else", "anon:elsewhere", 2e9, 1)  # the one place is taken
    slept: list[float] = []
    client = Client(live_server.url, max_retries=2, sleep=slept.append)
    with pytest.raises(ServiceUnavailable, match="at capacity") as refused:
        client.predict("MSFT", 4)
    assert isinstance(refused.value, Refused) and refused.value.retry_after >= 1
    assert len(slept) == 2 and all(s >= 1 for s in slept)  # two retries, then the error
    admission.release("someone-else")


def test_an_unreachable_service_is_a_clear_error():
    slept: list[float] = []
    client = Client("http://127.0.0.1:9", max_retries=1, sleep=slept.append)
    with pytest.raises(ServiceUnavailable, match="unreachable"):
        client.predict("AAPL", 5)
    assert slept == [1]
