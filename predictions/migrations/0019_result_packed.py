"""A prediction's result is stored compressed (plumbing/packed_json.py), not as jsonb.

Each stored result is copied into the new column, then the old one goes: nothing is lost,
and the migration runs backwards the same way.
"""

from django.db import migrations

import plumbing.packed_json

BATCH = 500


def _copy(apps, source: str, target: str) -> None:
    model = apps.get_model("predictions", "PredictionRequest")
    rows = model.objects.exclude(**{f"{source}__isnull": True}).only("id", source)
    batch = []
    for row in rows.iterator(chunk_size=BATCH):
        setattr(row, target, getattr(row, source))
        batch.append(row)
        if len(batch) == BATCH:
            model.objects.bulk_update(batch, [target])
            batch = []
    if batch:
        model.objects.bulk_update(batch, [target])


def pack(apps, schema_editor) -> None:
    _copy(apps, "result", "result_packed")


def unpack(apps, schema_editor) -> None:
    _copy(apps, "result_packed", "result")


class Migration(migrations.Migration):
    dependencies = [
        ("predictions", "0018_result_through_orjson"),
    ]

    operations = [
        migrations.AddField(
            model_name="predictionrequest",
            name="result_packed",
            field=plumbing.packed_json.PackedJSONField(blank=True, null=True),
        ),
        migrations.RunPython(pack, unpack, elidable=False),
        migrations.RemoveField(model_name="predictionrequest", name="result"),
        migrations.RenameField(
            model_name="predictionrequest", old_name="result_packed", new_name="result"
        ),
    ]
