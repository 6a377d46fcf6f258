"""The band rule reads only tune-window skill over GARCH(1,1)-t: a candidate that beats it
at 1 and 5 days is served; with none, the simplest one that is not worse is."""

from __future__ import annotations

from forecasting.evaluation.band_choice import choose_band

HORIZONS = (1, 5, 20)


def entry(*cells: tuple[float, float, float]) -> dict:
    return {str(h): {"skill": s, "ci": [lo, hi]} for h, (s, lo, hi) in zip(HORIZONS, cells,
                                                                         strict=True)}  # fmt: skip


TIE = entry((0.0, -0.01, 0.01), (0.0, -0.01, 0.01), (0.0, -0.02, 0.02))
WORSE = entry((-0.03, -0.05, -0.01), (0.0, -0.01, 0.01), (0.0, -0.02, 0.02))
BEATS = entry((0.02, 0.01, 0.03), (0.02, 0.005, 0.035), (0.0, -0.02, 0.02))
BEATS_MORE = entry((0.03, 0.02, 0.04), (0.03, 0.01, 0.05), (0.01, -0.02, 0.04))


def test_the_candidate_that_beats_garch_is_served_and_the_best_of_several():
    assert choose_band({"ewma": TIE, "gjr": BEATS}, HORIZONS)[0] == "gjr"
    winner, why = choose_band({"gjr": BEATS, "har_parkinson": BEATS_MORE}, HORIZONS)
    assert winner == "har_parkinson" and "2 candidates beat it" in why


def test_a_win_at_one_day_only_is_not_a_win():
    half = entry((0.02, 0.01, 0.03), (0.01, -0.01, 0.03), (0.0, -0.02, 0.02))

    winner, why = choose_band({"har_parkinson": half, "ewma": WORSE}, HORIZONS)
    assert winner == "har_parkinson" and "simplest that ties" in why  # ewma is worse
    assert choose_band({"gjr": half}, HORIZONS)[0] == "garch"  # GARCH is simpler than GJR


def test_with_no_winner_the_simplest_tie_is_served_and_garch_when_nothing_simpler_ties():
    winner, why = choose_band({"rolling": WORSE, "ewma": TIE, "gjr": TIE}, HORIZONS)
    assert winner == "ewma" and "no candidate beat GARCH(1,1)-t significantly" in why

    winner, why = choose_band({"rolling": WORSE, "ewma": WORSE, "residual": TIE}, HORIZONS)
    assert winner == "garch" and "GARCH(1,1)-t is served" in why
