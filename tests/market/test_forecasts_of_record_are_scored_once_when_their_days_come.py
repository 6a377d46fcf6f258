"""Forecasts of record on a replayed market clock, without a worker: the clock cuts the
offline history, a new day retires yesterday's answers, each forecast is recorded once and
each of its steps scored once, and the track record shows public forecasts to anyone and
private ones to their owner only."""

from __future__ import annotations

import math
import time
from datetime import date
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from forecasting.proper_scores import interval_score
from market import market_days, tasks
from marketdata import market_clock
from marketdata.sources import price_chain
from predictions import answer_cache
from predictions.models import ForecastRecord, ForecastScore
from tests.support.records import finished_on_bar

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]
START = date(2013, 1, 2)  # a Wednesday


def finished(symbol: str, as_of: str, close: float, path: list[float], user=None):
    """A request finished on `as_of`: naive answered, ridge failed."""
    return finished_on_bar(symbol, as_of, close, path, user, failed=("ridge",))


def test_the_replay_serves_history_only_up_to_its_date_and_steps_trading_days(replay):
    assert market_clock.today() == START
    assert price_chain().fetch("AAPL").last_bar_date == START
    friday = date(2013, 1, 4)
    assert market_clock.step(2) == friday
    assert market_clock.step() == date(2013, 1, 7)  # the weekend has no bar
    assert price_chain().fetch("AAPL").last_bar_date == date(2013, 1, 7)
    assert price_chain().fetch("MSFT").last_bar_date == date(2013, 1, 7)


def test_a_new_day_retires_the_answers_computed_on_older_bars(replay):
    answer = finished("AAPL", "2013-01-02", 549.0, [550.0, 551.0])
    assert answer_cache.newest_answer("AAPL", 2) == answer
    version = answer.finished_at.timestamp()
    assert answer_cache.store("AAPL", 2, b'{"id": "stored"}', version, ttl=60)
    market_days.control("step", {"days": 1})
    assert answer_cache.newest_answer("AAPL", 2) is None
    assert answer_cache.lookup("AAPL", 2) is None  # the stored bytes went too
    assert not answer_cache.store("AAPL", 2, b'{"id": "stored"}', version, ttl=60)  # for good


def test_two_ticks_racing_for_one_step_move_the_clock_once(replay):
    market_clock.set_speed(0.5)
    assert not market_clock.due(now=time.time() + 60)  # paused: never due
    market_clock.set_running(True)
    before = market_clock.state()
    assert not market_clock.due(now=before.resumed_at + 0.4)
    assert market_clock.due(now=before.resumed_at + 0.5)
    first = market_clock.step()
    # A second tick that read the clock before the first moved it: its compare-and-set fails.
    moved = market_clock.script(market_clock._STEP)(
        [market_clock.KEY], [before.today.isoformat(), "2013-01-04", "0"]
    )
    assert (first, moved) == (date(2013, 1, 3), 0)
    assert market_clock.today() == date(2013, 1, 3)


def test_each_forecast_is_recorded_once_and_each_step_scored_once(replay):
    finished("AAPL", "2013-01-02", 549.03, [550.0, 552.0, 554.0])
    finished("AAPL", "2013-01-02", 549.03, [500.0, 500.0, 500.0])  # same bar: not recorded
    assert ForecastRecord.objects.count() == 1
    record = ForecastRecord.objects.get()
    assert record.path == [550.0, 552.0, 554.0] and set(record.members) == {"naive"}

    market_days.control("step", {"days": 2})
    tasks.score_forecasts()
    record.refresh_from_db()
    assert record.scored_steps == 2 and not record.matured
    assert ForecastScore.objects.filter(model="ensemble").count() == 2
    assert ForecastScore.objects.filter(model="naive").count() == 2

    tasks.score_forecasts()  # again, as a redelivered task would: nothing new
    assert ForecastScore.objects.count() == 4

    market_days.control("step", {"days": 5})
    tasks.score_forecasts()
    record.refresh_from_db()
    assert record.matured and ForecastScore.objects.count() == 6
    history = price_chain().fetch("AAPL")
    first = ForecastScore.objects.get(model="ensemble", step=1)
    bar = list(history.dates).index(first.date)
    # The realized return, in the as-of close's terms (549.03 is the traded close; the
    # history's adjusted closes are in other units).
    realized = 549.03 * float(history.adj_close[bar] / history.adj_close[bar - 1])
    assert first.date == date(2013, 1, 3) and first.realized == pytest.approx(realized)
    assert first.log_error == pytest.approx(math.log(550.0 / realized))
    assert first.covered == (550.0 * 0.98 <= realized <= 550.0 * 1.02)


def test_the_interval_score_charges_a_miss_by_how_far_it_missed():
    assert interval_score(98.0, 102.0, 100.0, 0.2) == pytest.approx(4.0)
    assert interval_score(98.0, 102.0, 103.0, 0.2) == pytest.approx(4.0 + 10.0)
    assert interval_score(98.0, 102.0, 97.0, 0.2) == pytest.approx(4.0 + 10.0)


URL = "/api/v1/symbols/{}/track-record/?horizon=3"


def test_the_track_record_shows_public_forecasts_to_anyone_and_private_ones_to_their_owner(
    replay, api_client, django_user_model
):
    owner = django_user_model.objects.create_user("alice")
    finished("AAPL", "2013-01-02", 549.03, [550.0, 552.0, 554.0])
    finished("AAPL", "2013-01-03", 542.0, [543.0, 544.0, 545.0], user=owner)
    market_days.control("step", {"days": 6})
    tasks.score_forecasts()

    anonymous = api_client.get(URL.format("aapl")).json()
    assert [f["as_of"] for f in anonymous["forecasts"]] == ["2013-01-02"]
    metrics = anonymous["metrics"]["ensemble"]
    assert metrics["n"] == 3 and metrics["coverage_n"] == 3
    assert anonymous["metrics"]["naive"]["skill"] == pytest.approx(0.0, abs=1e-9)
    assert anonymous["clock"]["mode"] == "replay" and anonymous["clock"]["date"] == "2013-01-10"

    api_client.force_authenticate(owner)
    mine = api_client.get(URL.format("AAPL")).json()
    assert [f["as_of"] for f in mine["forecasts"]] == ["2013-01-02", "2013-01-03"]


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/api/v1/symbols/AAPL;rm/track-record/", "symbol"),
        ("/api/v1/symbols/AAPL/track-record/?horizon=0", "horizon"),
        ("/api/v1/symbols/AAPL/track-record/?horizon=five", "horizon"),
        ("/api/v1/symbols/AAPL/track-record/?window=100000", "window"),
        ("/api/v1/symbols/AAPL/track-record/?window=%C2%B2", "window"),
    ],
)
def test_a_bad_track_record_question_is_a_400_that_says_why(api_client, path, field):
    response = api_client.get(path)
    assert response.status_code == 400
    assert field in response.json()["error"] or field in str(response.json())


def test_only_staff_may_move_the_clock(replay, api_client, django_user_model):
    assert api_client.get("/api/v1/clock/").json()["date"] == "2013-01-02"
    refused = api_client.post("/api/v1/clock/", {"action": "step"}, format="json")
    assert refused.status_code in (401, 403) and market_clock.today() == START
    api_client.force_authenticate(django_user_model.objects.create_user("bob"))
    assert api_client.post("/api/v1/clock/", {"action": "step"}, format="json").status_code == 403
    api_client.force_authenticate(django_user_model.objects.create_user("op", is_staff=True))
    stepped = api_client.post("/api/v1/clock/", {"action": "step", "days": 2}, format="json")
    assert stepped.status_code == 200 and stepped.json()["date"] == "2013-01-04"
    bad = api_client.post("/api/v1/clock/", {"action": "step", "days": "two"}, format="json")
    assert bad.status_code == 400 and "whole number" in str(bad.json())


@pytest.mark.django_db(transaction=True)
def test_the_python_client_reads_the_track_record(replay, live_server):
    from stockserve_client import BadRequest, Client

    finished("GOOG", "2013-01-02", 723.25, [724.0, 725.0])
    market_days.control("step", {"days": 3})
    tasks.score_forecasts()
    record = Client(live_server.url).track_record("goog", horizon=2)
    assert [f["as_of"] for f in record["forecasts"]] == ["2013-01-02"]
    assert record["metrics"]["ensemble"]["n"] == 2
    with pytest.raises(BadRequest, match="window"):
        Client(live_server.url).track_record("GOOG", horizon=2, window=0)


def test_the_clock_command_steps_and_explains_a_bad_value(replay):
    out = StringIO()
    call_command("clock", "step", "2", stdout=out)
    assert '"date": "2013-01-04"' in out.getvalue()
    with pytest.raises(CommandError, match=r"whole number of days \(got 'two'\)"):
        call_command("clock", "step", "two")
    with pytest.raises(CommandError, match="seconds a day lasts"):
        call_command("clock", "speed")
