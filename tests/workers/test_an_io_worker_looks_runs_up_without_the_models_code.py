"""A worker whose pool runs no model (`io`) gets the models' recipes worked out by a child
process at its start, so a warm request's coordinator compares them with the serving
generations' without importing any model's code (TensorFlow's import took a restarted
`io` worker's first warm request 2 s)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from datetime import date

import pytest

from forecasting import recipes
from forecasting.catalog import DEFAULT_MODELS
from registry import generations
from registry.models import ModelGeneration
from tests.support.processes import ROOT, database_url_for_workers
from workers import process_warmup

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]

# A pool process of an io worker: warmed up as start_worker's pool is, then a warm
# request's coordinator's lookups (every model's serving generation, its recipe, a stored run).
POOL_PROCESS = """
import json, sys
import django
django.setup()
from marketdata.sources import price_chain
from registry import answering
from workers import process_warmup
process_warmup.warm_up({"io", "scoring"})
history = price_chain().fetch("MSFT")
found = answering.stored_model_runs(%r, history, 5)
heavy = sorted({m.split(".")[0] for m in sys.modules} & {"tensorflow", "keras", "sklearn"})
models = sorted(m for m in sys.modules if m in %r)
print(json.dumps({"found": found, "imported": heavy + models}))
"""


def serve_a_generation_of_every_model(recipe_of: dict[str, str]) -> None:
    day = date(2013, 1, 2)
    for model in DEFAULT_MODELS:
        generation = ModelGeneration.objects.create(
            symbol="MSFT", model=model, generation=1, price_key="k", train_bars=10,
            train_last_date=day, data_last_date=day, fit_seconds=0.1, state=b"s",
            recipe=recipe_of[model],
        )  # fmt: skip
        generations.start_serving(generation, "the first")


def coordinator_imports(handed: dict[str, str]) -> dict[str, object]:
    """What a pool process started with `handed` in its environment found and imported."""
    env = {key: value for key, value in os.environ.items() if key != process_warmup.RECIPES_ENV}
    env.update(
        DATABASE_URL=database_url_for_workers(),
        PREDICTION_MODELS=",".join(DEFAULT_MODELS),
        REGISTRY_SHADOW="true",
        MODEL_SEED="0",
        **handed,
    )
    modules = [f"forecasting.{model}" for model in DEFAULT_MODELS]
    script = POOL_PROCESS % (list(DEFAULT_MODELS), modules)
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=180,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def test_with_the_recipes_handed_over_the_lookups_import_no_models_code(settings) -> None:
    settings.PREDICTION_MODELS = list(DEFAULT_MODELS)
    settings.REGISTRY_SHADOW, settings.MODEL_SEED = True, 0
    handed = process_warmup.recipes_worked_out_apart({"io", "scoring"})
    worked_out = json.loads(handed[process_warmup.RECIPES_ENV])
    assert worked_out == {model: recipes.recipe(model, 0) for model in DEFAULT_MODELS}
    serve_a_generation_of_every_model(worked_out)

    report = coordinator_imports(handed)

    assert report["found"] == dict.fromkeys(DEFAULT_MODELS)  # looked up: none stored yet
    assert report["imported"] == []


def test_without_them_the_same_lookups_import_every_models_code(settings) -> None:
    serve_a_generation_of_every_model({m: recipes.recipe(m, 0) for m in DEFAULT_MODELS})

    report = coordinator_imports({})

    assert report["found"] == dict.fromkeys(DEFAULT_MODELS)
    assert report["imported"] == [
        "keras", "sklearn", "tensorflow", *sorted(f"forecasting.{m}" for m in DEFAULT_MODELS),
    ]  # fmt: skip


@pytest.mark.parametrize("queues", [{"cpu"}, {"io", "cpu"}, {"spare"}, {"gpu"}])
def test_a_pool_that_runs_the_models_works_them_out_itself(settings, queues) -> None:
    settings.REGISTRY_SHADOW = True
    assert process_warmup.recipes_worked_out_apart(queues) == {}


def test_with_shadow_generations_off_nothing_asks_a_recipe(settings) -> None:
    settings.REGISTRY_SHADOW = False
    assert process_warmup.recipes_worked_out_apart({"io"}) == {}


def test_a_child_that_fails_leaves_each_process_to_work_them_out_and_says_why(
    settings, caplog
) -> None:
    settings.REGISTRY_SHADOW, settings.PREDICTION_MODELS = True, ["naive", "prophet"]

    with caplog.at_level(logging.WARNING, logger="workers.process_warmup"):
        handed = process_warmup.recipes_worked_out_apart({"io"})

    assert handed == {}
    assert "the models' recipes were not worked out apart" in caplog.text
    assert "unknown model 'prophet'; choose one of naive" in caplog.text  # the child's words
