"""A body that is not UTF-8, or nests too deeply, is a 400 with a sentence on every path
that reads JSON (the fast path, DRF's, TF Serving's and the staff workers page's run),
never a 500 or a traceback logged at ERROR; a well-formed body still goes through."""

from __future__ import annotations

import logging

import pytest
from django.contrib.auth.models import User

from tests.support import wsgi
from tests.support.api import finished_prediction

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]
NOT_UTF8 = b'{"instances": ["\xff"]}'
DEEP = b"[" * 1000 + b"]" * 1000
PREDICT, RUNS = "/v1/models/ensemble:predict", "/workers/runs/"


@pytest.fixture
def errors(caplog):
    caplog.set_level(logging.WARNING)
    yield lambda: [r for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize("body", [NOT_UTF8, b"\xfe\xff\x00", b'{"symbol": "\xc3"}'])
def test_tf_serving_refuses_bytes_that_are_not_utf8(client, errors, body):
    response = client.post(PREDICT, body, content_type="application/json")
    assert response.status_code == 400, response.content[:200]
    assert response.json()["error"].endswith(".") and "Traceback" not in response.json()["error"]
    assert set(response.json()) == {"error"}  # TF Serving's error shape
    assert errors() == []


def test_the_rest_api_and_its_fast_path_refuse_them_too(client, errors):
    body = b'{"symbol": "\xff", "horizon": 5}'
    fast = wsgi.call("POST", "/api/v1/predictions/", raw=body)
    drf = client.post("/api/v1/predictions/", body, content_type="application/json")
    assert fast.status == 400 and drf.status_code == 400
    assert "error" in drf.json() and errors() == []


def test_a_utf8_body_is_still_answered(client):
    finished_prediction("AAPL", 2)
    body = '{"instances": [{"symbol": "AAPL", "horizon": 2}], "note": "café"}'.encode()
    response = client.post(PREDICT, body, content_type="application/json")
    assert response.status_code == 200 and response.json()["predictions"][0]["symbol"] == "AAPL"


@pytest.mark.parametrize(
    ("body", "says"),
    [(DEEP, "too deeply"), (NOT_UTF8, "not UTF-8"), (b"{nope", "not JSON")],
)
def test_the_workers_page_refuses_an_unreadable_run_with_a_sentence(client, errors, body, says):
    client.force_login(User.objects.create_superuser("root", password="pw-for-this-test"))
    response = client.post(RUNS, body, content_type="application/json")
    assert response.status_code == 400 and says in response.json()["error"]
    assert errors() == []
    allowed_past = client.post(RUNS, b'{"action": "remove", "host": "workers"}',
                               content_type="application/json")  # fmt: skip
    assert allowed_past.status_code == 400  # read, then refused for what it asks
    assert "is a group, not a host" in allowed_past.json()["error"]
