"""Operator pages are for staff; every page tells the browser where the websockets are."""

from __future__ import annotations

import json

import pytest
from django.core.checks import Error

from tests.support.live import make_user
from webui.checks import websocket_url_check

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def live_config(response) -> dict:
    html = response.content.decode()
    start = html.index('<script id="live-config" type="application/json">') + len(
        '<script id="live-config" type="application/json">'
    )
    return json.loads(html[start : html.index("</script>", start)])


@pytest.mark.parametrize("path", ["/dashboard/", "/loadtest/"])
def test_operator_pages_send_visitors_and_non_staff_to_the_login(client, path):
    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"] == f"/admin/login/?next={path}"
    client.force_login(make_user("viewer", staff=False))
    assert client.get(path).status_code == 302


@pytest.mark.parametrize("path", ["/dashboard/", "/loadtest/"])
def test_staff_get_the_operator_pages(client, path, settings):
    settings.WS_PORT = 9123
    client.force_login(make_user("ops", staff=True))
    response = client.get(path)
    assert response.status_code == 200
    assert live_config(response) == {"websocket_url": "", "ws_port": 9123}
    assert 'href="/dashboard/"' in response.content.decode()


def test_the_predict_page_knows_the_websocket_and_the_expected_stages(client, settings):
    settings.WEBSOCKET_URL = "/"
    response = client.get("/")
    assert live_config(response)["websocket_url"] == "/"
    assert 'id="pipeline-models"' in response.content.decode()
    assert 'href="/dashboard/"' not in response.content.decode()


def test_a_websocket_url_the_browser_cannot_use_fails_the_system_check(settings):
    settings.WEBSOCKET_URL = "http://example.com"
    (error,) = websocket_url_check()
    assert isinstance(error, Error) and error.id == "webui.E001"
    settings.WEBSOCKET_URL = "wss://example.com"
    assert websocket_url_check() == []
