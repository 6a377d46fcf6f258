"""A database migrated to the schema from before the registry's and the price store's tables
moved out of the predictions app keeps every row once migrated forward: the move is Django's
state only (same tables, same constraint and index names), a stored run still belongs to its
generation, and the content types (so the admin's permissions) follow the models.

Runs on SQLite and, marked `postgres`, on PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime
from typing import Any

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from marketdata.models import PriceSnapshot
from registry.models import GenerationEvent, ModelGeneration, ModelHealth, StoredRun

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

LAST_BEFORE_THE_MOVE = ("predictions", "0016_prediction_lane")
MOVED = {
    "modelgeneration": "registry",
    "storedrun": "registry",
    "generationevent": "registry",
    "modelhealth": "registry",
    "pricesnapshot": "marketdata",
}
WHEN = datetime(2026, 11, 2, 21, 0, tzinfo=UTC)


def _latest() -> list[tuple[str, str]]:
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


def _before_the_move() -> list[tuple[str, str | None]]:
    """predictions at 0016, registry and marketdata at zero, every other app at its latest
    migration that does not need the move."""
    graph = MigrationExecutor(connection).loader.graph
    moved = {("registry", "0001_initial"), ("marketdata", "0001_initial")}
    moved |= {n for n in graph.nodes if n[0] == "predictions" and n > LAST_BEFORE_THE_MOVE}
    targets: dict[str, tuple[str, str | None]] = {
        "predictions": LAST_BEFORE_THE_MOVE,
        "registry": ("registry", None),
        "marketdata": ("marketdata", None),
    }
    for node in sorted(graph.nodes):
        if node[0] in ("predictions", "registry", "marketdata"):
            continue
        if moved.isdisjoint(graph.forwards_plan(node)):
            targets[node[0]] = max(targets.get(node[0], node), node)  # type: ignore[type-var]
    return list(targets.values())


@pytest.fixture
def before_the_move() -> Iterator[Any]:
    """The historical models of the schema before the move; the latest schema again after."""
    executor = MigrationExecutor(connection)
    targets = _before_the_move()
    executor.migrate(targets)
    try:
        applied = [target for target in targets if target[1] is not None]
        yield MigrationExecutor(connection).loader.project_state(applied).apps
    finally:
        MigrationExecutor(connection).migrate(_latest())
        ContentType.objects.clear_cache()


def _write_old_rows(apps: Any) -> dict[str, int]:
    old = {name: apps.get_model("predictions", name) for name in MOVED}
    generation = old["modelgeneration"].objects.create(
        symbol="AAPL",
        model="arima",
        generation=3,
        created_at=WHEN,
        mode="fine-tuned",
        parent_generation=2,
        price_key="k" * 64,
        data_source="sample",
        train_bars=250,
        train_last_date=date(2026, 10, 30),
        data_last_date=date(2026, 10, 30),
        fit_seconds=1.5,
        metrics={"rmse": 1.25},
        state=b"\x00state\xff",
        worker="worker-1",
        recipe="r1",
    )
    run = old["storedrun"].objects.create(
        generation=generation,
        horizon=5,
        price_key="k" * 64,
        state_version=4,
        run={"forecast": [1.0, 2.0]},
        created_at=WHEN,
    )
    event = old["generationevent"].objects.create(
        symbol="AAPL",
        model="arima",
        generation=3,
        action="promoted",
        replaced=2,
        reason="beat the serving one",
        actor="operator",
        created_at=WHEN,
        recipe="r1",
    )
    health = old["modelhealth"].objects.create(
        symbol="AAPL",
        model="arima",
        state="demoted",
        reason="errors above its peers",
        since=date(2026, 10, 29),
        statistic=5.5,
        steps=40,
        watching_from=date(2026, 9, 1),
        updated_at=WHEN,
    )
    old["pricesnapshot"].objects.create(
        key="p" * 64,
        symbol="AAPL",
        source="sample",
        first_bar_date=date(2025, 10, 30),
        last_bar_date=date(2026, 10, 30),
        bars=250,
        fetched_at=WHEN,
        data=b"\x01bars\xfe",
    )
    return {"generation": generation.pk, "run": run.pk, "event": event.pk, "health": health.pk}


def _old_content_types(apps: Any) -> dict[str, int]:
    """A database from before the move had the models' content types under predictions
    (the test database, made at the latest schema, has them under their new apps). One
    keeps a duplicate under its new app, as a post_migrate between the migrations makes."""
    content_type = apps.get_model("contenttypes", "ContentType")
    permission = apps.get_model("auth", "Permission")
    ids = {}
    for model, app in MOVED.items():
        if model == "storedrun":
            content_type.objects.get_or_create(app_label=app, model=model)
        else:
            content_type.objects.filter(app_label=app, model=model).delete()
        row, _ = content_type.objects.get_or_create(app_label="predictions", model=model)
        permission.objects.get_or_create(
            content_type=row, codename=f"view_{model}", defaults={"name": f"Can view {model}"}
        )
        ids[model] = row.pk
    return ids


def test_a_database_from_before_the_move_keeps_every_row(before_the_move: Any) -> None:
    pks = _write_old_rows(before_the_move)
    content_types = _old_content_types(before_the_move)

    MigrationExecutor(connection).migrate(_latest())
    ContentType.objects.clear_cache()

    generation = ModelGeneration.objects.get(pk=pks["generation"])
    assert (generation.symbol, generation.model, generation.generation) == ("AAPL", "arima", 3)
    assert (generation.mode, generation.parent_generation, generation.recipe) == (
        "fine-tuned",
        2,
        "r1",
    )
    assert (generation.train_bars, generation.train_last_date) == (250, date(2026, 10, 30))
    assert generation.metrics == {"rmse": 1.25}
    assert bytes(generation.state) == b"\x00state\xff"
    assert generation.created_at == WHEN

    run = StoredRun.objects.get(pk=pks["run"])
    assert run.generation_id == generation.pk
    assert run.generation == generation
    assert list(generation.runs.all()) == [run]
    assert (run.horizon, run.state_version, run.run) == (5, 4, {"forecast": [1.0, 2.0]})

    event = GenerationEvent.objects.get(pk=pks["event"])
    assert (event.action, event.replaced, event.actor, event.reason) == (
        "promoted",
        2,
        "operator",
        "beat the serving one",
    )

    health = ModelHealth.objects.get(pk=pks["health"])
    assert (health.state, health.since, health.steps, health.statistic) == (
        "demoted",
        date(2026, 10, 29),
        40,
        5.5,
    )

    snapshot = PriceSnapshot.objects.get(key="p" * 64)
    assert (snapshot.symbol, snapshot.bars, snapshot.last_bar_date) == (
        "AAPL",
        250,
        date(2026, 10, 30),
    )
    assert bytes(snapshot.data) == b"\x01bars\xfe"

    # The tables kept their constraint and index names.
    with connection.cursor() as cursor:
        names = {
            name
            for table in ("predictions_modelgeneration", "predictions_storedrun")
            + ("predictions_generationevent", "predictions_modelhealth")
            for name in connection.introspection.get_constraints(cursor, table)
        }
    assert {
        "unique_model_generation",
        "unique_stored_run",
        "predictions_symbol_5d94c7_idx",
        "one_health_per_model",
    } <= names

    # The same content type rows now name the new apps, their permissions with them.
    for model, app in MOVED.items():
        moved = ContentType.objects.get(pk=content_types[model])
        assert (moved.app_label, moved.model) == (app, model)
        assert moved.permission_set.filter(codename=f"view_{model}").exists()
    assert not ContentType.objects.filter(app_label="predictions", model__in=MOVED).exists()
    assert ContentType.objects.filter(app_label="registry", model="storedrun").count() == 1
    assert ContentType.objects.get_for_model(ModelGeneration).pk == content_types["modelgeneration"]
