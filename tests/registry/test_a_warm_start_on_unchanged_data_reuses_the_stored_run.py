"""A generation's run on the same prices and horizon is reused, not recomputed."""

from __future__ import annotations

import pytest

from marketdata.sources import price_chain
from registry import answering
from registry.model_registry import forget_runs
from registry.models import StoredRun

pytestmark = pytest.mark.django_db


def test_the_second_run_is_the_stored_one_and_says_so():
    history = price_chain().fetch("IBM")
    first = answering.model_run("arima", history, 5)
    assert first["trained"] is True and first["registry"]["run"] == "computed"
    assert first["backtest_seconds"] > 0

    again = answering.model_run("arima", history, 5)
    assert again["registry"] == {
        "generation": first["registry"]["generation"],
        "warm_start": True,
        "mode": "warm-start",
        "state_status": "loaded",
        "run": "stored",
    }
    assert again["trained"] is False and again["backtest_seconds"] == 0.0
    assert again["forecast"] == first["forecast"] and again["metrics"] == first["metrics"]


def test_another_horizon_or_other_prices_run_the_model():
    history = price_chain().fetch("IBM")
    answering.model_run("ridge", history, 5)
    other_horizon = answering.model_run("ridge", history, 7)
    assert other_horizon["registry"]["run"] == "computed"
    assert other_horizon["registry"]["state_status"] == "loaded"  # warm state, fresh backtest
    shorter = history.tail(len(history) - 1)
    assert answering.model_run("ridge", shorter, 5)["registry"]["run"] == "computed"
    assert StoredRun.objects.filter(generation__symbol="IBM", horizon=7).count() == 1


def test_a_run_from_another_code_version_is_not_reused():
    history = price_chain().fetch("GOOG")
    answering.model_run("naive", history, 3)
    StoredRun.objects.filter(generation__symbol="GOOG").update(state_version=0)
    forget_runs()  # as a process running the new code starts without copies
    assert answering.model_run("naive", history, 3)["registry"]["run"] == "computed"


def test_a_cold_request_neither_reads_nor_reuses_the_registry(settings):
    settings.REGISTRY_SHADOW = False  # the newest generation serves at once
    history = price_chain().fetch("MSFT")
    answering.model_run("naive", history, 2)
    cold = answering.model_run("naive", history, 2, warm_start=False)
    assert cold["trained"] is True and cold["registry"]["run"] == "computed"


def test_with_shadows_a_cold_request_trains_afresh_and_the_refit_serves_at_once():
    history = price_chain().fetch("MSFT")
    first = answering.model_run("naive", history, 2)
    cold = answering.model_run("naive", history, 2, warm_start=False)
    assert first["registry"]["generation"] == 1
    assert cold["trained"] is True and cold["registry"]["generation"] == 2
    assert "shadow" not in cold and "judging" not in cold["registry"]
    again = answering.model_run("naive", history, 2)
    assert again["registry"]["generation"] == 2 and again["registry"]["run"] == "stored"
