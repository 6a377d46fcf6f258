"""A rollback reason with a newline (or any control character) cannot start a line of its
own in the plain log format: the line the service writes escapes it. An ordinary reason
is written as given, and a traceback still follows its record on lines of its own."""

from __future__ import annotations

import logging
import sys

import pytest

from tests.support.generations import two_generations

pytestmark = pytest.mark.django_db
FORGED = "ok\n2026-11-26 10:00:00,000 INFO [-] django.security: staff login from 10.0.0.1"


def console_formatter() -> logging.Formatter:
    """The formatter settings.LOGGING gave the console handler (LOG_FORMAT=plain)."""
    handler = next(h for h in logging.getLogger().handlers if h.get_name() == "console")
    assert handler.formatter is not None
    return handler.formatter


def logged_lines(caplog, reason: str, staff_api_client) -> list[str]:
    two_generations()
    caplog.set_level(logging.INFO, logger="registry.generations")
    response = staff_api_client.post(
        "/api/v1/generations/IBM/ridge/",
        {"action": "promote", "generation": 2, "reason": reason},
        format="json",
    )
    assert response.status_code == 200
    record = [r for r in caplog.records if r.name == "registry.generations"][-1]
    return console_formatter().format(record).split("\n")


def test_a_newline_in_a_reason_stays_on_its_line(caplog, staff_api_client):
    lines = logged_lines(caplog, FORGED + "\x1b[2K\u2028!", staff_api_client)
    assert len(lines) == 1
    assert lines[0].endswith(r"promoted: ok\n2026-11-26 10:00:00,000 INFO [-] django.security: "
                             r"staff login from 10.0.0.1\x1b[2K\u2028!")  # fmt: skip


def test_an_ordinary_reason_is_written_as_given(caplog, staff_api_client):
    lines = logged_lines(caplog, "worse on 3 days — reverted", staff_api_client)
    assert lines == [lines[0]] and lines[0].endswith("promoted: worse on 3 days — reverted")


def test_a_traceback_still_follows_its_record():
    try:
        raise ValueError("bad")
    except ValueError:
        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed\nhere", None,
                                   sys.exc_info())  # fmt: skip
    record.request_id = "-"
    text = console_formatter().format(record).split("\n")
    assert text[0].endswith(r"x: failed\nhere") and text[1] == "Traceback (most recent call last):"
