"""On PostgreSQL a statement the service sends again is prepared on its connection, so the
server parses and plans it once per connection, not per request; the setting turns it off
for a pooler that cannot keep prepared statements."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.db import connection

from predictions.models import PredictionRequest


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_query_sent_again_is_prepared_with_its_parameters_bound_by_the_server():
    if connection.vendor != "postgresql":
        pytest.skip("prepared statements are PostgreSQL's")
    for _ in range(3):
        assert not PredictionRequest.objects.filter(symbol="NOPE").exists()

    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        prepared = [row[0] for row in cursor.fetchall() if "predictionrequest" in row[0]]
    [statement] = prepared
    assert "$1" in statement and "NOPE" not in statement


def _options(prepared_statements: str) -> str:
    """The database options a process started with this setting has."""
    code = "from config import settings; print(settings.DATABASES['default'].get('OPTIONS', {}))"
    env = {
        **os.environ,
        "DATABASE_URL": "postgres://stockserve@127.0.0.1:5432/stockserve",
        "DATABASE_PREPARED_STATEMENTS": prepared_statements,
    }
    return subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.splitlines()[-1]


def test_the_setting_turns_them_off():
    assert "'prepare_threshold': 2" in _options("1")
    assert "prepare_threshold" not in _options("0")
