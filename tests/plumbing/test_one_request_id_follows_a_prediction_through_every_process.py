"""`grep <id>` follows one prediction: the web process's line when it is queued and each
worker stage's line carry the prediction's id; lines of no request carry "-"."""

from __future__ import annotations

import io
import logging

import pytest
from django.conf import settings

from plumbing import log_context
from tests.support.api import submit_and_wait
from tests.support.processes import WORKER_LOG
from tests.support.waiting import eventually

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]


@pytest.fixture
def web_log():
    """The web process's console handler as configured (filter and format), into a buffer."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(log_context.RequestIdFilter())
    handler.setFormatter(logging.Formatter(settings.LOGGING["formatters"]["plain"]["format"]))
    logging.getLogger().addHandler(handler)
    yield stream
    logging.getLogger().removeHandler(handler)


def test_the_web_line_and_every_stage_line_carry_the_prediction_id(
    staff_api_client, celery_worker, web_log
):
    start = WORKER_LOG.stat().st_size if WORKER_LOG.exists() else 0
    accepted, prediction = submit_and_wait(staff_api_client, symbol="MSFT", horizon=2)
    assert prediction["status"] == "done", prediction["error"]
    tag = f"[{accepted['id']}]"

    web_lines = web_log.getvalue().splitlines()
    assert any("queued MSFT h=2" in line and tag in line for line in web_lines)

    def stage_lines() -> list[str]:
        with open(WORKER_LOG, encoding="utf-8", errors="replace") as log:
            log.seek(start)
            return [line for line in log if tag in line and " stage " in line]

    eventually(lambda: any("stage combine ok" in line for line in stage_lines()), 30,
               "the combine stage's line in the worker log")  # fmt: skip
    stages = {line.split(" stage ", 1)[1].split()[0] for line in stage_lines()}
    assert {"prices", "model:naive", "sentiment", "combine"} <= stages


def test_a_line_outside_any_request_says_so_and_tasks_find_their_id():
    log_context.reset()  # as a task's end or a web request's end leaves it
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "hello", None, None)
    log_context.RequestIdFilter().filter(record)
    assert record.request_id == "-"

    rid = "0b6c7a52-8a8f-4a1e-9d7e-3c2f1a0b9c8d"
    assert log_context.request_id_in([[{"stage": "x"}], rid, "AAPL"]) == rid
    assert log_context.request_id_in(["not-a-uuid-but-36-characters-long!!"]) is None
