"""The cascade's judgement of the cheap models, on hand-made model runs (no worker)."""

from __future__ import annotations

from predictions.strategies.cascade import judge, split_models


def run(model: str, final: float, mae: float = 1.0, naive_mae: float = 1.1) -> dict:
    path = [100.0 + (final - 100.0) * (t + 1) / 5 for t in range(5)]
    return {
        "model": model,
        "ok": True,
        "forecast": path,
        "metrics": {"mae": mae, "naive_mae": naive_mae},
    }


def decide(runs: list[dict], deep: tuple[str, ...] = ("lstm",)):
    return judge(runs, list(deep), 100.0, 5, max_spread=0.02, max_mase=1.0)


def test_it_splits_models_by_their_tensorflow_flag():
    assert split_models(["naive", "lstm", "ridge", "tcn", "arima"]) == (
        ["naive", "ridge", "arima"],
        ["lstm", "tcn"],
    )


def test_it_answers_when_the_cheap_models_agree_and_have_skill():
    decision = decide([run("naive", 101.0), run("ridge", 101.5)])
    assert decision.escalate is False
    summary = decision.summary()
    assert summary["ran"] == ["naive", "ridge"] and summary["skipped"] == ["lstm"]
    assert "agree" in summary["reason"]


def test_it_escalates_when_the_cheap_models_disagree():
    decision = decide([run("naive", 101.0), run("ridge", 106.0)])
    assert decision.escalate is True
    assert decision.reason.startswith("cheap models disagree")
    assert decision.summary()["ran"] == ["naive", "ridge", "lstm"]


def test_it_escalates_when_the_cheap_models_do_not_beat_no_change():
    decision = decide([run("naive", 101.0, mae=1.2), run("ridge", 101.2, mae=1.3)])
    assert decision.escalate is True
    assert "unsure" in decision.reason and decision.cheap_mase >= 1.0


def test_it_escalates_when_too_few_cheap_models_succeeded():
    failed = {"model": "ridge", "ok": False, "error": "boom"}
    decision = decide([run("naive", 101.0), failed])
    assert decision.escalate is True
    assert "only 1 cheap model" in decision.reason


def test_without_deep_models_the_cheap_ones_always_answer():
    decision = decide([run("naive", 101.0), run("ridge", 120.0)], deep=())
    assert decision.escalate is False
    assert decision.summary()["skipped"] == []
