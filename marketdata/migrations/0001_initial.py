"""The price store's table moves here from the predictions app, in Django's state only.

The table stays as it is (``db_table`` keeps predictions_pricesnapshot, its index on symbol
keeps its name): no database operation runs. predictions 0017 removes the model from the
predictions app's state and moves its content type.
"""

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
                    name="PriceSnapshot",
                    fields=[
                        ("key", models.CharField(max_length=64, primary_key=True, serialize=False)),
                        ("symbol", models.CharField(db_index=True, max_length=16)),
                        ("source", models.CharField(max_length=64)),
                        ("first_bar_date", models.DateField()),
                        ("last_bar_date", models.DateField()),
                        ("bars", models.PositiveIntegerField()),
                        ("fetched_at", models.DateTimeField(default=django.utils.timezone.now)),
                        ("data", models.BinaryField()),
                    ],
                    options={
                        "db_table": "predictions_pricesnapshot",
                        "ordering": ["-fetched_at"],
                    },
                ),
            ],
        ),
    ]
