"""Staff see which generation serves each model on the track record page and roll one back
with a reason; everyone else sees the generations but no button."""

from __future__ import annotations

import pytest
from django.test import Client

from registry import generations
from tests.support.generations import two_generations

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def two_generations_the_second_promoted():
    two_generations()
    generations.promote("IBM", "ridge", 2, "shadow won: a test")


def signed_in(page, live_server, user):
    client = Client()
    client.force_login(user)
    cookie = client.cookies["sessionid"].value
    page.context.add_cookies([{"name": "sessionid", "value": cookie, "url": live_server.url}])


def test_staff_roll_back_with_a_reason_and_see_it_recorded(page, live_server, django_user_model):
    two_generations_the_second_promoted()
    signed_in(page, live_server, django_user_model.objects.create_user("ops", is_staff=True))
    page.on("dialog", lambda dialog: dialog.accept("generation 2 drifts"))

    page.goto(f"{live_server.url}/track-record/?symbol=IBM&horizon=2")
    row = page.locator("#generations tbody tr[data-model=ridge]")
    row.locator("button", has_text="Roll back to 1").click()
    page.wait_for_selector("#message.ok")

    assert "generation 1 serves again" in page.text_content("#message")
    assert generations.serving("IBM", "ridge").generation == 1
    newest = page.locator("#generation-events tbody tr").first
    newest.filter(has_text="generation 2 drifts").wait_for()  # the table is redrawn after
    cells = newest.locator("td").all_text_contents()
    assert cells[1:] == ["ridge", "1", "rolled back", "generation 2 drifts", "ops"]


def test_others_see_the_generations_but_no_button(page, live_server):
    two_generations_the_second_promoted()

    page.goto(f"{live_server.url}/track-record/?symbol=IBM&horizon=2")
    page.wait_for_selector("#generations tbody tr[data-model=ridge]")

    cells = page.locator("#generations tbody tr[data-model=ridge] td").all_text_contents()
    assert cells[:4] == ["ridge", "2", "–", "1"]
    assert page.locator("#generations button").count() == 0
