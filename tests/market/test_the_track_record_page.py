"""The track-record page: anyone may open it (its data comes from the API's access rule);
it says which market clock runs and links back to predicting."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def test_anyone_may_open_the_track_record_page_and_it_names_the_clock(client, settings):
    settings.MARKET_CLOCK = "live"
    response = client.get("/track-record/?symbol=MSFT&horizon=3")
    assert response.status_code == 200
    page = response.content.decode()
    assert 'value="MSFT"' in page and 'value="3"' in page and "live" in page


def test_the_page_only_reads(client):
    assert client.post("/track-record/").status_code == 405
    assert client.get("/track-record/?horizon=abc").status_code == 200  # falls back to 5


def test_the_predict_page_links_to_the_track_record(client):
    page = client.get("/").content.decode()
    assert 'id="track-link" href="/track-record/"' in page and "Market clock" in page
