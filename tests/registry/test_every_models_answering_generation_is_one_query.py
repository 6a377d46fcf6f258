"""A warm request's coordinator reads every model's answering generation in one query:
the newest generation (shadow generations off) or the serving one, the same that the
per-model lookups answer."""

from __future__ import annotations

from datetime import date

import pytest

from registry import generations, model_registry
from registry.models import ModelGeneration

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def make(model: str, number: int) -> ModelGeneration:
    day = date(2024, 1, 2)
    return ModelGeneration.objects.create(
        symbol="IBM", model=model, generation=number, price_key="k", train_bars=10,
        train_last_date=day, data_last_date=day, fit_seconds=0.1, state=b"s",
    )  # fmt: skip


def test_the_newest_and_the_serving_generation_of_every_model_in_one_query(
    django_assert_num_queries,
):
    for number in (1, 2, 3):
        make("ridge", number)
    naive = make("naive", 1)
    generations.start_serving(naive, "the first")
    generations.promote("IBM", "ridge", 1, "a test's choice")
    generations.promote("IBM", "ridge", 2, "a test's later choice")
    models = ["naive", "ridge", "arima"]

    with django_assert_num_queries(1):
        newest = model_registry.latest_of("IBM", models)
    with django_assert_num_queries(1):
        serving = generations.serving_of("IBM", models)

    assert {m: g.generation for m, g in newest.items()} == {"naive": 1, "ridge": 3}
    assert {m: g.generation for m, g in serving.items()} == {"naive": 1, "ridge": 2}
    for model in models:  # the same answers as one model at a time
        assert newest.get(model) == model_registry.latest("IBM", model)
        assert serving.get(model) == generations.serving("IBM", model)
