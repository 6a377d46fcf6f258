"""Admin sign-in attempts are counted per address and refused beyond THROTTLE_LOGIN."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def test_attempts_beyond_the_rate_get_429_but_the_page_still_shows(client, settings):
    rest = dict(settings.REST_FRAMEWORK)
    rest["DEFAULT_THROTTLE_RATES"] = {**rest["DEFAULT_THROTTLE_RATES"], "login": "3/min"}
    settings.REST_FRAMEWORK = rest
    guesses = [
        client.post("/admin/login/", {"username": "admin", "password": f"guess{i}"})
        for i in range(4)
    ]
    assert [g.status_code for g in guesses] == [200, 200, 200, 429]
    assert "Too many sign-in attempts" in guesses[3].content.decode()
    assert int(guesses[3]["Retry-After"]) >= 1
    assert client.get("/admin/login/").status_code == 200  # reading the form is not counted
