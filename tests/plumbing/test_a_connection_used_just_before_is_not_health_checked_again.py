"""A database connection that finished a request or task without an error moments ago
skips Django's health check (`SELECT 1`) before the next; one idle longer, or whose last
work failed, is checked as before."""

from __future__ import annotations

import pytest
from django.db import connection

from plumbing import db_health

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


@pytest.fixture
def clock(monkeypatch):
    now = [500.0]
    monkeypatch.setattr(db_health.time, "monotonic", lambda: now[0])
    return now


def next_unit_of_work() -> bool:
    """Whether the next unit of work skips the health check (left to be done, as Django's
    `close_old_connections` leaves it for a connection it keeps)."""
    connection.health_check_done = False
    db_health.starting()
    return bool(connection.health_check_done)


def test_a_connection_used_just_before_skips_the_check(settings, clock):
    settings.DB_HEALTH_CHECK_SECONDS = 5
    connection.health_check_enabled = True
    connection.ensure_connection()
    db_health.finished()
    clock[0] += 4
    assert next_unit_of_work()
    db_health.finished()
    clock[0] += 6
    assert not next_unit_of_work()  # idle too long: checked


def test_a_connection_whose_work_failed_is_checked(settings, clock):
    settings.DB_HEALTH_CHECK_SECONDS = 5
    connection.health_check_enabled = True
    connection.ensure_connection()
    connection.errors_occurred = True
    db_health.finished()
    assert not next_unit_of_work()


def test_zero_seconds_checks_every_time(settings, clock):
    settings.DB_HEALTH_CHECK_SECONDS = 0
    connection.health_check_enabled = True
    connection.ensure_connection()
    db_health.finished()
    assert not next_unit_of_work()
