"""The Celery application; configuration comes from Django settings (CELERY_*)."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("stockserve")
# Redis result backends that do not subscribe a worker to results it never reads.
app.loader.override_backends = dict.fromkeys(
    ("redis", "rediss"), "predictions.result_backend:RedisBackendForWorkers"
)
app.config_from_object("django.conf:settings", namespace="CELERY")
# Each app's tasks module: the pipeline's (predictions) and the market's.
app.autodiscover_tasks(["predictions", "market"])
