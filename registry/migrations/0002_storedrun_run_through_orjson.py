"""The stored run's JSON is written and read with orjson (plumbing/fast_json.py).

In Django's state only: the column stays the same text (SQLite) or jsonb (PostgreSQL), so
no database operation runs (SQLite would otherwise copy the whole table to alter it).
"""

from django.db import migrations, models

import plumbing.fast_json


class Migration(migrations.Migration):
    dependencies = [
        ("registry", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.AlterField(
                    model_name="storedrun",
                    name="run",
                    field=models.JSONField(
                        decoder=plumbing.fast_json.Decoder, encoder=plumbing.fast_json.Encoder
                    ),
                ),
            ],
        ),
    ]
