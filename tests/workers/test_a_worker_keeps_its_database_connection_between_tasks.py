"""Between tasks a worker keeps a healthy database connection and closes an old one.

Celery's Django fixup closed every connection before and after each task, so on
PostgreSQL every task paid for a new connection (about two thirds of a cold request's
PostgreSQL CPU, `make -C lab request-cost ARGS="--database postgres"`). Now Celery closes them only
every CELERY_DB_REUSE_MAX tasks and the worker applies Django's own rule between tasks:
CONN_MAX_AGE and the health check, as for a web request. SQLite's connections live as
long: a new one cost a task 0.8 ms of CPU, and in autocommit no read outlives its
statement, so a kept connection sees every commit.
"""

from __future__ import annotations

import time

import pytest
from celery.fixups.django import DjangoWorkerFixup
from django.db import connection

from config.celery_app import app
from workers.lifecycle import close_old_database_connections

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


def test_a_healthy_connection_is_kept_and_one_past_its_age_is_closed():
    connection.ensure_connection()
    first = connection.connection

    close_old_database_connections(task=None)

    assert connection.settings_dict["CONN_MAX_AGE"] == 60
    assert connection.connection is first
    connection.close_at = time.monotonic() - 1  # past CONN_MAX_AGE
    close_old_database_connections(task=None)
    assert connection.connection is None


def test_celerys_fixup_leaves_the_connection_open_around_a_task():
    connection.ensure_connection()
    first = connection.connection
    fixup = DjangoWorkerFixup(app)

    task = app.tasks["celery.backend_cleanup"]  # any task run by a worker, not eagerly

    fixup.on_task_prerun(sender=task)
    fixup.on_task_postrun(sender=task)

    assert fixup.db_reuse_max and connection.connection is first
