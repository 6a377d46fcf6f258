"""The watchlist asks nothing while a worker its questions need is warming up: the refresh
`workers.lifecycle` sends when the stack's io worker is ready is deferred, sending itself
again, and runs once every queue it needs has a warm consumer, or after
PRECOMPUTE_WARM_UP_WAIT_SECONDS whatever the workers say; beat's refresh skips its turn
while one warms up (its next turn comes anyway). With warm workers both run at once.

Run by the suite's real (warm, io and cpu) worker; the warming worker is a spare worker's
heartbeat in the real Redis, as a worker writes it while its pool warms up (its questions
would go to `spare` once it is warm)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from celery import current_app
from celery.result import AsyncResult
from django.conf import settings

from market import tasks
from tests.support.spare import warm
from tests.support.waiting import eventually
from workers import presence

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]
SPARE = "spare@warming"


def announce_spare(warm: bool, started_at: float) -> None:
    presence.announce({"hostname": SPARE, "queues": ["spare"], "concurrency": 1,
                       "started_at": started_at, "warm_processes": int(warm)})  # fmt: skip


@pytest.fixture
def warm_suite_worker(celery_worker: str) -> None:
    """The suite's io and cpu worker has warmed up, and no spare worker is alive."""
    eventually(lambda: warm(celery_worker), 180, "the suite's worker warming up", 0.25)
    eventually(lambda: not presence.consumers_of("spare"), 30, "no spare heartbeat", 0.2)


@pytest.fixture
def warming_spare(warm_suite_worker: None) -> Iterator[float]:
    """A spare worker that started now and has not warmed up yet (its start is yielded)."""
    started_at = time.time()
    announce_spare(warm=False, started_at=started_at)
    try:
        yield started_at
    finally:
        presence.withdraw(SPARE)


def refresh(**kwargs: Any) -> dict[str, Any]:
    """A refresh as the io worker runs it, and what it did."""
    sent = current_app.send_task(tasks.REFRESH_WATCHLIST, kwargs=kwargs, queue="io")
    outcome: dict[str, Any] = sent.get(timeout=30)
    return outcome


def test_the_start_up_refresh_waits_for_a_warming_worker_and_runs_once_it_is_warm(
    warming_spare,
):
    deferred = refresh(started_at=time.time())
    assert deferred["deferred"].startswith("no warm worker on spare yet"), deferred
    assert deferred["again"]  # sent again: deferred, not lost

    announce_spare(warm=True, started_at=warming_spare)
    ran = {}
    again = deferred["again"]
    while again:  # each deferral names the next try; the last one ran
        ran = AsyncResult(again).get(timeout=30)
        again = ran.get("again")
    assert ran == {"started": [], "fresh": 0, "deferred": ""}


def test_with_warm_workers_the_start_up_refresh_runs_at_once(warm_suite_worker):
    assert refresh(started_at=time.time()) == {"started": [], "fresh": 0, "deferred": ""}


def test_the_start_up_refresh_runs_after_the_longest_wait_whatever_the_workers_say(
    warming_spare,
):
    long_ago = time.time() - settings.PRECOMPUTE_WARM_UP_WAIT_SECONDS - 1
    announce_spare(warm=False, started_at=long_ago)

    assert refresh(started_at=long_ago) == {"started": [], "fresh": 0, "deferred": ""}


def test_beats_refresh_skips_its_turn_while_a_worker_warms_up_and_runs_when_none_does(
    warming_spare,
):
    skipped = refresh()
    assert skipped["deferred"].startswith("no warm worker on spare yet"), skipped
    assert skipped["again"] is None  # beat's next turn comes anyway

    announce_spare(warm=True, started_at=warming_spare)
    assert refresh() == {"started": [], "fresh": 0, "deferred": ""}
