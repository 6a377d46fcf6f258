"""The statement an answer carries about point forecasts comes from the evaluation table it
is given: Holm over every tested cell, this symbol's cell at the nearest evaluated horizon,
the pool for a symbol outside the table."""

from __future__ import annotations

import pytest

from forecasting import point_skill, scorecard
from tests.support.scorecards import table, with_cell

BEATS = {"skill_vs_naive": 0.03, "skill_ci": [0.02, 0.04], "dm_p_value": 1e-6}


def test_when_nothing_beats_no_change_it_says_so_with_the_tables_count():
    said = point_skill.statement("AAPL", 5, card=table())

    assert said["cells"]["tested"] == 12 and said["cells"]["better"] == 0
    assert said["beats_no_change"] is False
    assert said["sentence"].startswith("Out of sample, no point forecast beat no change: 0 of 12")
    assert "For AAPL at 5 days, the ensemble's path scored +0.1 %" in said["sentence"]
    assert "(95 % interval −0.9 % to +1.1 %)" in said["sentence"]
    assert said["own"]["skill"] == pytest.approx(0.001) and said["source"] == "a test table"


def test_a_model_that_beats_no_change_changes_the_sentence():
    card = with_cell(table(), "MSFT", "ridge", 20, **BEATS)

    said = point_skill.statement("AAPL", 5, card=card)

    assert said["cells"]["better"] == 1
    assert "1 of 12 model × symbol × horizon cells beat no change" in said["sentence"]
    assert "ridge for MSFT at 20 days" in said["sentence"]
    assert "no point forecast beat" not in said["sentence"]
    assert said["beats_no_change"] is False  # AAPL's ensemble did not
    assert said["sentence"].endswith("the path is its centre, not a call on direction.")


def test_where_the_ensemble_itself_beats_no_change_the_path_is_said_to():
    card = with_cell(table(), "AAPL", "ensemble", 5, **BEATS)

    said = point_skill.statement("AAPL", 5, card=card)

    assert said["beats_no_change"] is True and said["own"]["after_holm"] == "better"
    assert (
        "+3.0 % against it (95 % interval +2.0 % to +4.0 %): significantly better"
        in (said["sentence"])
    )
    assert "Here the path did beat no change" in said["sentence"]


def test_a_p_value_holm_does_not_keep_is_not_a_win():
    card = with_cell(table(), "AAPL", "ensemble", 5, skill_vs_naive=0.02, dm_p_value=0.01)

    said = point_skill.statement("AAPL", 5, card=card)

    assert said["cells"]["better"] == 0 and said["beats_no_change"] is False  # 0.01 > 0.05/12


def test_the_tables_own_verdict_after_holm_is_used_when_it_has_one():
    card = table()
    for entry in card["symbols"].values():
        for rows in entry["models"].values():
            for r in rows.values():
                if r["dm_p_value"] is not None:
                    r["after_holm"] = "not significant"
    card["symbols"]["MSFT"]["models"]["ridge"]["1"]["after_holm"] = "worse"

    assert point_skill.statement("AAPL", 1, card=card)["cells"]["worse"] == 1


@pytest.mark.parametrize("asked, evaluated", [(1, 1), (2, 1), (3, 5), (7, 5), (12, 20), (30, 20)])
def test_a_horizon_not_evaluated_reads_the_nearest_evaluated_one(asked, evaluated):
    own = point_skill.statement("AAPL", asked, card=table())["own"]

    assert own["horizon"] == evaluated and own["interpolated"] is (asked != evaluated)


def test_a_symbol_outside_the_table_gets_the_pooled_figure():
    card = with_cell(table(), "MSFT", "ensemble", 5, skill_vs_naive=-0.02, n_origins=3000)
    card["symbols"]["MSFT"]["models"]["ensemble"]["5"]["mae_pct"] = 2.9 * 1.02

    own = point_skill.statement("ZZZZ", 5, card=card)["own"]

    pooled = 1 - (1000 * 2.9 * 0.999 + 3000 * 2.9 * 1.02) / (1000 * 2.9 + 3000 * 2.9)
    assert own["scope"] == "pooled" and own["skill"] == pytest.approx(pooled)
    assert own["ci"] is None and own["symbol_range"] == [-0.02, 0.001]


def test_no_published_table_means_no_statement():
    assert point_skill.statement("AAPL", 5, card={"source": None, "symbols": {}}) is None


def test_the_adopted_table_is_followed_not_quoted():
    card = scorecard.load_scorecard()
    p_values = [
        r["dm_p_value"]
        for entry in card["symbols"].values()
        for rows in entry["models"].values()
        for r in rows.values()
        if r["dm_p_value"] is not None
    ]

    said = point_skill.statement("AAPL", 5)

    assert said["cells"]["tested"] == len(p_values)
    assert f"of {len(p_values)} model × symbol × horizon cells" in said["sentence"]
    assert said["source"] == card["source"]
