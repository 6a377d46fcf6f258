"""The registry's tables move here from the predictions app, in Django's state only.

The tables stay as they are (``db_table`` keeps predictions_*, and every constraint and
index keeps its name): no database operation runs. predictions 0017 removes the models
from the predictions app's state and moves their content types.
"""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("predictions", "0016_prediction_lane"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name="ModelGeneration",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("symbol", models.CharField(max_length=16)),
                        ("model", models.CharField(max_length=32)),
                        ("generation", models.PositiveIntegerField()),
                        ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                        ("mode", models.CharField(default="trained", max_length=16)),
                        ("parent_generation", models.PositiveIntegerField(blank=True, null=True)),
                        ("price_key", models.CharField(max_length=64)),
                        ("data_source", models.CharField(blank=True, max_length=64)),
                        ("train_bars", models.PositiveIntegerField()),
                        ("train_last_date", models.DateField()),
                        ("data_last_date", models.DateField()),
                        ("fit_seconds", models.FloatField()),
                        ("metrics", models.JSONField(default=dict)),
                        ("state", models.BinaryField()),
                        ("worker", models.CharField(blank=True, max_length=255)),
                        ("recipe", models.CharField(blank=True, default="", max_length=32)),
                    ],
                    options={
                        "db_table": "predictions_modelgeneration",
                        "ordering": ["symbol", "model", "-generation"],
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("symbol", "model", "generation"),
                                name="unique_model_generation",
                            )
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="StoredRun",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("horizon", models.PositiveSmallIntegerField()),
                        ("price_key", models.CharField(max_length=64)),
                        ("state_version", models.PositiveIntegerField()),
                        ("run", models.JSONField()),
                        ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                        (
                            "generation",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="runs",
                                to="registry.modelgeneration",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "predictions_storedrun",
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("generation", "horizon", "price_key", "state_version"),
                                name="unique_stored_run",
                            )
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="GenerationEvent",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("symbol", models.CharField(max_length=16)),
                        ("model", models.CharField(max_length=32)),
                        ("generation", models.PositiveIntegerField()),
                        ("action", models.CharField(max_length=16)),
                        ("replaced", models.PositiveIntegerField(blank=True, null=True)),
                        ("reason", models.TextField()),
                        ("actor", models.CharField(default="registry", max_length=150)),
                        ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                        ("recipe", models.CharField(blank=True, default="", max_length=32)),
                    ],
                    options={
                        "db_table": "predictions_generationevent",
                        "ordering": ["-created_at", "-id"],
                        "indexes": [
                            models.Index(
                                fields=["symbol", "model", "-created_at"],
                                name="predictions_symbol_5d94c7_idx",
                            )
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="ModelHealth",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("symbol", models.CharField(max_length=16)),
                        ("model", models.CharField(max_length=32)),
                        ("state", models.CharField(default="ok", max_length=16)),
                        ("reason", models.TextField(blank=True)),
                        ("since", models.DateField(blank=True, null=True)),
                        ("statistic", models.FloatField(default=0.0)),
                        ("steps", models.PositiveIntegerField(default=0)),
                        ("watching_from", models.DateField(blank=True, null=True)),
                        ("updated_at", models.DateTimeField(default=django.utils.timezone.now)),
                    ],
                    options={
                        "db_table": "predictions_modelhealth",
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("symbol", "model"), name="one_health_per_model"
                            )
                        ],
                    },
                ),
            ],
        ),
    ]
