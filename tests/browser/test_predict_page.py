"""A person opens /, types a symbol, and sees the forecast built by the real worker."""

from __future__ import annotations

import pytest

from forecasting.calibration import load_calibration
from forecasting.volatility import LABELS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def test_it_predicts_from_the_page(page, live_server, celery_worker):
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(live_server.url + "/")
    page.fill("#symbol", "ibm")
    page.fill("#horizon", "7")
    page.click("#submit")

    page.wait_for_selector("#result:not([hidden])", timeout=120_000)
    summary = page.text_content("#result-summary")
    assert "sample" in summary
    # The band leads: its bounds at the horizon, σ, and what it covered.
    assert "after the close of 2013-03-01" in page.text_content("#band-label")
    assert " – " in page.text_content("#band-range")
    assert "σ of the 7-day log return" in page.text_content("#band-sigma")
    # IBM at 7 days: its own measured coverage at 5 days, with n, said to be interpolated.
    coverage = page.text_content("#band-coverage")
    assert "On IBM's held-out history the 80% band held the price" in coverage
    assert "5-day forecasts (the nearest evaluated horizon; 7 days is interpolated)" in coverage
    assert "is its central path" in page.text_content("#path-statement")
    assert "missed by" in summary  # what `unsure` means, whichever way it came out
    assert LABELS[load_calibration().band_method] in page.text_content("#band-method")
    assert page.text_content("#result-title") == "IBM: next 7 trading day(s)"
    assert page.locator("#models tbody tr").count() >= 3
    assert "ok" in page.text_content("#models tbody")
    assert "sample data" in page.text_content("#sentiment")
    # plotly drew the zoomed band (closes, band edges, no change, central path) and the
    # history beside it
    assert page.locator("#band-chart .scatterlayer .trace").count() >= 5
    assert page.locator("#chart .scatterlayer .trace").count() >= 3
    assert page.locator("#stages tbody tr").count() >= 6
    assert page.text_content("#status") == "done"
    assert not errors, errors


def test_it_shows_a_clear_error_for_an_unknown_symbol(page, live_server):
    page.goto(live_server.url + "/")
    page.fill("#symbol", "ZZZZ")
    page.click("#submit")
    page.wait_for_selector("#message.bad")
    assert "No price source can serve ZZZZ" in page.text_content("#message")
