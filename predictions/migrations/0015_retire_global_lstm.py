"""The pooled network (`global_lstm`) was removed: its registry rows go with it.

Its generations (the pooled network under symbol `*`, and each symbol's scaling over it),
their stored runs, its generation events and its model-health verdicts hold states no code
can load and would list a model that no longer exists. The forecasts it made and their
scores (ForecastScore) stay: they are the record of what was forecast.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

MODEL = "global_lstm"


def retire(apps: Any, schema_editor: Any) -> None:
    for name in ("ModelGeneration", "GenerationEvent", "ModelHealth"):
        apps.get_model("predictions", name).objects.filter(model=MODEL).delete()


class Migration(migrations.Migration):
    dependencies = [("predictions", "0014_dispatch_task_id")]

    operations = [migrations.RunPython(retire, migrations.RunPython.noop)]
