"""The predict page leads with the band: its bounds at the horizon and σ in figures, a
zoomed panel where the band fills the plot, and the path labelled as its centre with what
the evaluation table says about point forecasts, beside the history for context.

Real parts: the live server, Redis, the database, headless Chromium; the answer is
assembled by the code a worker runs and served from the cache, as a repeated question is."""

from __future__ import annotations

import pytest

from forecasting import scorecard
from tests.api.test_an_answer_leads_with_the_band_and_says_what_the_path_is import assembled
from tests.support.scorecards import table, with_cell

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def ask(page, url: str) -> None:
    page.goto(url + "/")
    page.fill("#symbol", "AAPL")
    page.fill("#horizon", "5")
    page.click("#submit")
    page.wait_for_selector("#result:not([hidden])")
    page.wait_for_selector("#band-chart .annotation-text")


def box(page, selector: str) -> dict:
    found = page.locator(selector).first.bounding_box()
    assert found is not None, selector
    return found


def test_the_band_at_the_horizon_leads_in_figures_and_fills_its_own_panel(page, live_server):
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    done = assembled("AAPL", 5)
    reading = done.result["combined"]["reading"]
    band = reading["band"]

    ask(page, live_server.url)

    assert page.text_content("#band-range") == f"{band['lower']:.2f} – {band['upper']:.2f}"
    assert band["date"] in page.text_content("#band-label")
    assert f"σ of the 5-day log return {band['sigma'] * 100:.2f}%" in page.text_content(
        "#band-sigma"
    )
    assert "On AAPL's held-out history the 80% band held the price" in page.text_content(
        "#band-coverage"
    )
    labels = page.locator("#band-chart .annotation-text").all_text_contents()
    assert f"upper {band['upper']:.2f}" in labels and f"lower {band['lower']:.2f}" in labels
    # Readable at a glance: the band takes a third of the panel's width and half its height.
    plot, fill = box(page, "#band-chart .nsewdrag"), box(page, "#band-chart .js-fill")
    assert fill["width"] > plot["width"] / 3 and fill["height"] > plot["height"] / 2
    # The path is there, labelled for what it is, with the table's statement beside it.
    legend = page.text_content("#band-chart .legend")
    assert "central path (no better than no change)" in legend and "80% band" in legend
    statement = page.text_content("#path-statement")
    assert "is its central path" in statement
    assert reading["path"]["evaluation"]["sentence"] in statement
    assert page.locator("#chart .scatterlayer .trace").count() >= 3  # the history beside it
    assert not errors, errors


def test_a_table_where_a_model_beats_no_change_says_so_on_the_page(page, live_server, monkeypatch):
    beats = with_cell(
        table(("AAPL", "MSFT", "IBM")),
        "AAPL",
        "ensemble",
        5,
        skill_vs_naive=0.04,
        skill_ci=[0.02, 0.06],
        dm_p_value=1e-7,
    )
    monkeypatch.setattr(scorecard, "load_scorecard", lambda *args: beats)
    assembled("AAPL", 5)

    ask(page, live_server.url)

    statement = page.text_content("#path-statement")
    assert "1 of 18 model × symbol × horizon cells beat no change" in statement
    assert "ensemble for AAPL at 5 days" in statement and "significantly better" in statement
    assert "central path (beat no change out of sample)" in page.text_content("#band-chart .legend")
