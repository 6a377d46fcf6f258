"""The registry's tables and the price store's leave the predictions app, in state only.

registry 0001 and marketdata 0001 took the models over with the same tables; here the
predictions app stops holding them (no database operation), and their content types follow
them, so the admin's permissions and any generic relation keep pointing at the same rows.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

MOVED = {
    "modelgeneration": "registry",
    "storedrun": "registry",
    "generationevent": "registry",
    "modelhealth": "registry",
    "pricesnapshot": "marketdata",
}


def _relabel(apps: Any, forward: bool) -> None:
    content_type = apps.get_model("contenttypes", "ContentType")
    permission = apps.get_model("auth", "Permission")
    for model, app in MOVED.items():
        old, new = ("predictions", app) if forward else (app, "predictions")
        moving = content_type.objects.filter(app_label=old, model=model).first()
        if moving is None:
            continue  # a fresh database: post_migrate makes them under their new app
        # A row already under the new name was made by a post_migrate in between (e.g.
        # `migrate registry` alone, or a migration back and forth): the moving row keeps
        # the permissions granted to users and groups, the duplicate and its own go.
        duplicate = content_type.objects.filter(app_label=new, model=model).first()
        if duplicate is not None:
            permission.objects.filter(content_type=duplicate).delete()
            duplicate.delete()
        moving.app_label = new
        moving.save(update_fields=["app_label"])
    content_type.objects.clear_cache()


def forwards(apps: Any, schema_editor: Any) -> None:
    _relabel(apps, forward=True)


def backwards(apps: Any, schema_editor: Any) -> None:
    _relabel(apps, forward=False)


class Migration(migrations.Migration):
    dependencies = [
        ("predictions", "0016_prediction_lane"),
        ("registry", "0001_initial"),
        ("marketdata", "0001_initial"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.DeleteModel(name="StoredRun"),
                migrations.DeleteModel(name="ModelGeneration"),
                migrations.DeleteModel(name="GenerationEvent"),
                migrations.DeleteModel(name="ModelHealth"),
                migrations.DeleteModel(name="PriceSnapshot"),
            ],
        ),
        migrations.RunPython(forwards, backwards),
    ]
