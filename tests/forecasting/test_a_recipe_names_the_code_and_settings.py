"""A model's recipe (forecasting/recipes.py) changes with its code, parameters,
state version or seed, and with nothing else."""

from __future__ import annotations

from forecasting import recipes
from forecasting.catalog import get_model_class
from forecasting.ridge import RidgeForecaster


def test_the_same_code_and_seed_give_the_same_recipe() -> None:
    assert recipes.recipe("ridge", 0) == recipes.recipe("ridge", 0)
    assert recipes.recipe("ridge", 0) != recipes.recipe("ridge", 1)
    assert recipes.recipe("ridge", 0) != recipes.recipe("naive", 0)


def test_it_reads_the_models_own_module_not_the_shared_contract() -> None:
    modules = [m.__name__ for m in recipes._defining_modules(get_model_class("ridge"))]
    assert modules == ["forecasting.ridge"]


def test_new_default_parameters_make_a_new_recipe(monkeypatch) -> None:
    before = recipes.recipe("ridge", 0)
    recipes._computed.cache_clear()
    changed = {**RidgeForecaster.default_params, "alpha": 12345.0}
    monkeypatch.setattr(RidgeForecaster, "default_params", changed)
    try:
        assert recipes.recipe("ridge", 0) != before
    finally:
        recipes._computed.cache_clear()
