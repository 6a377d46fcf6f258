"""The track record is computed once per version of its records and served from the cache
after that, with the same body; a new score or a new forecast of record makes it computed
again; each caller's visibility has its own entry; a track record that must be computed
counts in the caller's THROTTLE_EXPENSIVE rate, a cached one does not."""

from __future__ import annotations

import pytest

from market import market_days, tasks, track_record, track_record_cache
from predictions.models import PredictionRequest
from tests.support.records import finished_on_bar

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]
URL = "/api/v1/symbols/AAPL/track-record/?horizon=3"


def finished(as_of: str, close: float, path: list[float], user=None) -> PredictionRequest:
    return finished_on_bar("AAPL", as_of, close, path, user)


@pytest.fixture
def computed(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int, int]]:
    """Every track record computed (not read from the cache) during the test."""
    track_record_cache.forget()
    calls: list[tuple[str, int, int]] = []
    original = track_record.track_record

    def counting(symbol: str, horizon: int, window: int, user: object) -> dict:
        calls.append((symbol, horizon, window))
        return original(symbol, horizon, window, user)

    monkeypatch.setattr(track_record, "track_record", counting)
    yield calls
    track_record_cache.forget()


def without_clock(body: dict) -> dict:
    return {k: v for k, v in body.items() if k != "clock"}


def test_a_repeat_is_read_from_the_cache_with_the_same_body(replay, api_client, computed, settings):
    finished("2013-01-02", 549.03, [550.0, 552.0, 554.0])
    market_days.control("step", {"days": 2})
    tasks.score_forecasts()
    first = api_client.get(URL).json()
    again = api_client.get(URL).json()
    assert len(computed) == 1 and again == first
    assert first["forecasts"][0]["realized"] and first["metrics"]["ensemble"]["n"] == 2

    settings.TRACK_RECORD_CACHE_MB = 0  # the same question, never cached: the same body
    assert without_clock(api_client.get(URL).json()) == without_clock(first)


def test_a_new_score_or_a_new_forecast_is_computed_again(replay, api_client, computed):
    finished("2013-01-02", 549.03, [550.0, 552.0, 554.0])
    market_days.control("step", {"days": 1})
    tasks.score_forecasts()
    before = api_client.get(URL).json()
    assert before["metrics"]["ensemble"]["n"] == 1

    market_days.control("step", {"days": 1})
    tasks.score_forecasts()  # a new score: the records' version changed
    scored = api_client.get(URL).json()
    assert len(computed) == 2 and scored["metrics"]["ensemble"]["n"] == 2

    finished("2013-01-04", 545.0, [546.0, 547.0, 548.0])  # a new forecast of record
    recorded = api_client.get(URL).json()
    assert len(computed) == 3
    assert [f["as_of"] for f in recorded["forecasts"]] == ["2013-01-02", "2013-01-04"]
    assert api_client.get(URL).json() == recorded and len(computed) == 3


def test_windows_beyond_the_records_share_one_entry_and_say_their_window(
    replay, api_client, computed
):
    finished("2013-01-02", 549.03, [550.0, 552.0, 554.0])
    assert api_client.get(f"{URL}&window=60").json()["window"] == 60
    assert api_client.get(f"{URL}&window=500").json()["window"] == 500
    assert len(computed) == 1  # one record: every window from 1 up is the same answer


def test_each_visibility_has_its_own_entry(replay, api_client, computed, django_user_model):
    owner = django_user_model.objects.create_user("alice")
    finished("2013-01-02", 549.03, [550.0, 552.0, 554.0])
    finished("2013-01-03", 542.0, [543.0, 544.0, 545.0], user=owner)
    assert len(api_client.get(URL).json()["forecasts"]) == 1
    api_client.force_authenticate(owner)
    assert len(api_client.get(URL).json()["forecasts"]) == 2  # not the public entry
    api_client.force_authenticate(None)
    assert len(api_client.get(URL).json()["forecasts"]) == 1
    assert len(computed) == 2


def test_computing_counts_in_the_expensive_rate_and_a_cached_answer_does_not(
    replay, api_client, computed, settings
):
    rest = dict(settings.REST_FRAMEWORK)
    rest["DEFAULT_THROTTLE_RATES"] = {**rest["DEFAULT_THROTTLE_RATES"], "expensive": "1/min"}
    settings.REST_FRAMEWORK = rest
    finished("2013-01-02", 549.03, [550.0, 552.0, 554.0])
    assert api_client.get(URL).status_code == 200  # computed: the one this minute allows
    refused = api_client.get("/api/v1/symbols/AAPL/track-record/?horizon=4")
    assert refused.status_code == 429 and int(refused["Retry-After"]) >= 1
    assert "track records that had to be computed" in refused.json()["error"]
    assert [api_client.get(URL).status_code for _ in range(3)] == [200, 200, 200]  # cached
    assert len(computed) == 1
