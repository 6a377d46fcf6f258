"""`make run`'s web processes: WEB_CONCURRENCY when set, else two per core; a value that is
not a number of processes stops the launch with a sentence, not a traceback."""

from __future__ import annotations

import os

import pytest

from launch import process_catalog


def test_unset_is_two_per_core_and_set_is_taken(monkeypatch):
    monkeypatch.delenv("WEB_CONCURRENCY", raising=False)
    assert process_catalog.web_workers() == 2 * (os.cpu_count() or 1)
    monkeypatch.setenv("WEB_CONCURRENCY", "3")
    assert process_catalog.web_workers() == 3


@pytest.mark.parametrize("value", ["abc", "0", "-2", "1.5"])
def test_anything_else_is_refused_with_a_sentence(monkeypatch, value):
    monkeypatch.setenv("WEB_CONCURRENCY", value)
    with pytest.raises(SystemExit, match="WEB_CONCURRENCY must be a number of processes"):
        process_catalog.web_workers()
