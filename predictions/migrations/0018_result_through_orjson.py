"""A prediction's result JSON is written and read with orjson (plumbing/fast_json.py).

In Django's state only: the column stays the same text (SQLite) or jsonb (PostgreSQL), so
no database operation runs (SQLite would otherwise copy the whole table to alter it).
"""

from django.db import migrations, models

import plumbing.fast_json


class Migration(migrations.Migration):
    dependencies = [
        ("predictions", "0017_tables_move_to_registry_and_marketdata"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.AlterField(
                    model_name="predictionrequest",
                    name="result",
                    field=models.JSONField(
                        blank=True,
                        null=True,
                        decoder=plumbing.fast_json.Decoder,
                        encoder=plumbing.fast_json.Encoder,
                    ),
                ),
            ],
        ),
    ]
