"""The Celery application; configuration comes from Django settings (CELERY_*)."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("stockserve")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_routes = {
    "workers.tasks.fetch_prices": {"queue": "io"},
    "workers.tasks.analyze_sentiment": {"queue": "io"},
    "workers.tasks.sweep_stale_predictions": {"queue": "io"},
    "workers.tasks.run_model": {"queue": "cpu"},
    "workers.tasks.combine_results": {"queue": "cpu"},
}
app.autodiscover_tasks(["workers"])
