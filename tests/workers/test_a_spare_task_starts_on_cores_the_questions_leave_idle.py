"""A spare-lane task starts once the work that is not niced (the questions' processes)
leaves cores idle, and waits at most SPARE_YIELD_SECONDS: background work is delayed for
the questions, never dropped. Read from /proc/stat's counters, built here. It waits only
while the usual lane is at work (a person's question holds an admission place, or a task
of io, cpu or gpu started in the last seconds): busy cores with no question behind them
(anonymous askers' misses) are not yielded to."""

from __future__ import annotations

import json
import time

import pytest

from forecasting import training_pause
from plumbing.redis_client import get_redis
from predictions import admission, lanes
from workers import lifecycle, queue_wait, yielding

CORES = 2


@pytest.fixture(autouse=True)
def no_pause_left_behind(monkeypatch):
    """A spare task's pause point and bound, as they were before the test (this process
    trains models in other tests)."""
    monkeypatch.setattr(training_pause, "_hook", None)
    monkeypatch.setattr(lifecycle, "_yield_left", 0.0)


def stat_line(user: int, nice: int, system: int, idle: int) -> str:
    return f"cpu  {user} {nice} {system} {idle} 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\n"


class Host:
    """/proc/stat's readings, one look apart (4 ticks on two cores, whatever its length):
    each step adds `questions` ticks of work that is not niced, and the niced spare's and
    idle ticks make up the rest."""

    def __init__(self, questions: list[int]) -> None:
        self.steps = iter(questions)
        self.user = self.nice = self.idle = 0
        self.now = 0.0

    def read(self) -> tuple[int, int]:
        return yielding.cpu_times(stat_line(self.user, self.nice, 0, self.idle))

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        busy = next(self.steps, 0)
        self.user += busy
        self.nice += max(0, 3 - busy)  # the spare worker takes what is left, bar a tick
        self.idle += 4 - busy - max(0, 3 - busy)

    def clock(self) -> float:
        return self.now


def wait(host: Host, most_seconds: float = 10.0) -> float:
    return yielding.wait_for_idle_cores(
        most_seconds, 1.5, read=host.read, sleep=host.sleep, clock=host.clock, cores=CORES
    )


def test_niced_time_is_not_the_questions_work():
    assert yielding.cpu_times(stat_line(100, 900, 20, 80)) == (120, 1100)
    assert yielding.busy_cores((0, 0), (3, 4), cores=2) == pytest.approx(1.5)


def test_a_task_waits_while_a_question_keeps_the_cores_busy_then_starts():
    host = Host([4, 3, 3, 0])  # a question's stages on both cores, then none

    assert wait(host) == pytest.approx(4 * yielding.WINDOW_SECONDS)


def test_a_task_on_an_idle_host_starts_after_one_look():
    assert wait(Host([0])) == pytest.approx(yielding.WINDOW_SECONDS)


def test_a_task_waits_at_most_its_bound_however_busy_the_host_stays():
    host = Host([4] * 10_000)

    waited = wait(host, most_seconds=1.0)

    assert 1.0 <= waited < 1.0 + 2 * yielding.WINDOW_SECONDS


def test_a_big_host_lets_background_work_beside_a_question():
    assert yielding.busy_limit(1.5, cores=2) == 0.5
    assert yielding.busy_limit(1.5, cores=16) == 14.5
    assert yielding.busy_limit(1.5, cores=1) == 0.5


@pytest.mark.parametrize(("queues", "waits"), [("spare", True), ("io,cpu", False)])
def test_only_the_spare_workers_tasks_yield(monkeypatch, settings, queues, waits):
    settings.SPARE_YIELD_SECONDS, settings.SPARE_YIELD_FREE_CORES = 3.0, 1.5
    monkeypatch.setenv("WORKER_QUEUES", queues)
    monkeypatch.setattr(yielding, "can_tell_its_own_work_apart", lambda: True)
    monkeypatch.setattr(yielding, "usual_lane_at_work", lambda: True)
    asked = []
    monkeypatch.setattr(
        yielding, "wait_for_idle_cores", lambda most, free: asked.append((most, free)) or 0.0
    )

    lifecycle.yield_to_questions(task=None)

    assert asked == ([(3.0, 1.5)] if waits else [])


def test_no_task_yields_with_the_bound_at_zero(monkeypatch, settings):
    settings.SPARE_YIELD_SECONDS = 0
    monkeypatch.setenv("WORKER_QUEUES", "spare")
    monkeypatch.setattr(yielding, "wait_for_idle_cores", lambda *a: pytest.fail("waited"))

    lifecycle.yield_to_questions(task=None)


def test_a_spare_worker_that_is_not_niced_does_not_wait_for_its_own_work(monkeypatch, settings):
    settings.SPARE_YIELD_SECONDS = 3.0
    monkeypatch.setenv("WORKER_QUEUES", "spare")
    monkeypatch.setattr(yielding.os, "nice", lambda increment: 0)
    monkeypatch.setattr(yielding, "wait_for_idle_cores", lambda *a: pytest.fail("waited"))

    lifecycle.yield_to_questions(task=None)


def test_with_the_usual_lane_quiet_a_spare_task_starts_at_once(monkeypatch, settings):
    settings.SPARE_YIELD_SECONDS = 3.0
    monkeypatch.setenv("WORKER_QUEUES", "spare")
    monkeypatch.setattr(yielding, "can_tell_its_own_work_apart", lambda: True)
    monkeypatch.setattr(yielding, "usual_lane_at_work", lambda: False)
    monkeypatch.setattr(yielding, "wait_for_idle_cores", lambda *a: pytest.fail("waited"))

    lifecycle.yield_to_questions(task=None)


@pytest.fixture
def lane_queues(monkeypatch):
    """Queues of this test's own in the real Redis (the suite's worker records io's)."""
    names = (f"io-{time.time_ns()}", f"cpu-{time.time_ns()}")
    monkeypatch.setattr(yielding, "USUAL_QUEUES", names)
    yield names
    get_redis().delete(*(f"stockserve:queue-waits:{name}" for name in names))


def started(queue: str, at: float) -> None:
    get_redis().lpush(f"stockserve:queue-waits:{queue}", json.dumps([at, 0.01]))


def test_the_usual_lane_is_at_work_for_a_few_seconds_after_a_task_started(lane_queues, places):
    io, cpu = lane_queues
    assert queue_wait.newest_start(lane_queues) is None
    assert not yielding.usual_lane_at_work(now=1_000.0)

    started(io, 990.0)
    started(cpu, 999.0)
    assert queue_wait.newest_start(lane_queues) == 999.0
    assert yielding.usual_lane_at_work(now=1_000.0)
    assert not yielding.usual_lane_at_work(now=999.0 + yielding.USUAL_LANE_RECENT_SECONDS + 1)


@pytest.fixture
def places(monkeypatch):
    """Admission's table of places under a key of this test's own in the real Redis."""
    key = f"stockserve:inflight-owners-{time.time_ns()}"
    monkeypatch.setattr(admission, "OWNERS_KEY", key)
    yield key
    get_redis().delete(key)


@pytest.mark.parametrize(
    ("owner", "at_work"),
    [
        ("user:7", True),
        ("stream:prices", True),
        ("batch:host-1", True),
        ("anon:203.0.113.9", False),
        (lanes.WATCHLIST_CLIENT, False),
    ],
)
def test_the_usual_lane_is_at_work_while_a_persons_question_holds_a_place(
    lane_queues, places, owner, at_work
):
    """A cold question's models train for seconds without starting a task: its place in
    admission, not its last start, says a person is waiting."""
    get_redis().hset(places, "request-1", owner)

    assert yielding.usual_lane_at_work(now=1_000.0) is at_work


@pytest.fixture
def spare_process(monkeypatch, settings):
    """A niced spare worker's process whose waits are recorded, not slept."""
    settings.SPARE_YIELD_SECONDS, settings.SPARE_YIELD_FREE_CORES = 3.0, 1.5
    monkeypatch.setenv("WORKER_QUEUES", "spare")
    monkeypatch.setattr(yielding, "can_tell_its_own_work_apart", lambda: True)
    waits: list[float] = []

    def wait_for_idle_cores(most: float, free: float) -> float:
        waits.append(most)
        return min(most, 2.0)  # the cores stayed busy 2 s each time

    monkeypatch.setattr(yielding, "wait_for_idle_cores", wait_for_idle_cores)
    return waits


def test_a_training_that_started_with_the_lane_quiet_yields_between_epochs(
    monkeypatch, spare_process
):
    """A question that comes after a spare task started still gets the cores: the task's
    training waits between epochs, SPARE_YIELD_SECONDS in all, then goes on."""
    at_work = False
    monkeypatch.setattr(yielding, "usual_lane_at_work", lambda: at_work)
    lifecycle.yield_to_questions(task=None)
    assert spare_process == []  # started at once

    at_work = True  # a person asks
    for _ in range(4):
        training_pause.between_epochs()

    assert spare_process == [3.0, 1.0]  # 2 s, then the 1 s left of the bound; then none


def test_a_training_outside_the_spare_lane_never_yields(monkeypatch, spare_process):
    monkeypatch.setenv("WORKER_QUEUES", "io,cpu")
    monkeypatch.setattr(yielding, "usual_lane_at_work", lambda: True)
    lifecycle.yield_to_questions(task=None)

    training_pause.between_epochs()

    assert spare_process == []
