"""ProvisioningRun moved here from the workers app; its table stays where it was."""

import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [("workers", "0001_initial")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="ProvisioningRun",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        (
                            "action",
                            models.CharField(
                                choices=[("add", "Add"), ("remove", "Remove"), ("status", "Status")],
                                max_length=16,
                            ),
                        ),
                        ("playbook", models.CharField(max_length=64)),
                        ("host", models.CharField(db_index=True, max_length=255)),
                        (
                            "args",
                            models.JSONField(blank=True, default=dict, help_text="non-secret arguments"),
                        ),
                        (
                            "status",
                            models.CharField(
                                choices=[
                                    ("queued", "Queued"),
                                    ("running", "Running"),
                                    ("succeeded", "Succeeded"),
                                    ("failed", "Failed"),
                                ],
                                default="queued",
                                max_length=16,
                            ),
                        ),
                        ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                        ("started_at", models.DateTimeField(blank=True, null=True)),
                        ("finished_at", models.DateTimeField(blank=True, null=True)),
                        ("rc", models.IntegerField(blank=True, null=True)),
                        ("ok", models.PositiveIntegerField(default=0)),
                        ("changed", models.PositiveIntegerField(default=0)),
                        ("failed", models.PositiveIntegerField(default=0)),
                        ("unreachable", models.PositiveIntegerField(default=0)),
                        ("error", models.TextField(blank=True)),
                        ("log", models.TextField(blank=True)),
                        ("requested_by", models.CharField(blank=True, max_length=150)),
                        ("runner_host", models.CharField(blank=True, max_length=255)),
                        ("runner_pid", models.IntegerField(blank=True, null=True)),
                    ],
                    options={
                        "ordering": ("-created_at", "-id"),
                        "db_table": "workers_provisioningrun",
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
