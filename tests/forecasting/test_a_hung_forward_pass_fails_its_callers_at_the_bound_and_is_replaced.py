"""A forward pass that hangs holds no caller past the bound (in a worker, the stage's soft
time limit): the caller, and every request queued behind the hung call, fail with a
sentence; the next caller gets a new batcher that answers; the hung batcher's thread ends
once its call returns. A caller that stopped waiting by its own time limit (a prefork
worker's) leaves a wedged batcher, replaced as well on the next use."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest

from forecasting import batching
from forecasting.batching import ForwardPassTimeout
from tests.support.waiting import eventually

_keys = itertools.count()


@pytest.fixture
def bound() -> Iterator[float]:
    previous = batching.configured()
    batching.configure(batching.Config(objective_s=1.0, wait_s=0.5))
    yield 0.5
    batching.configure(previous)


class HungOnce:
    """Its first call hangs until released; the next ones double their rows."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls = 0

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        self.calls += 1
        if self.calls == 1:
            self.release.wait(60)
        return rows * 2


def test_a_hung_call_fails_its_callers_within_the_bound_and_the_next_gets_a_new_batcher(bound):
    key = f"hung-{next(_keys)}"
    run = HungOnce()
    hung = batching.shared(key)
    running = hung.submit(np.ones((1, 2)), run=run)
    eventually(lambda: run.calls == 1, 10, "the first call to start")
    queued = hung.submit(np.ones((1, 2)), run=run)

    started = time.monotonic()
    with pytest.raises(ForwardPassTimeout, match=r"did not answer within 0\.5 s"):
        hung(np.ones((1, 2)), run=run)
    waited = time.monotonic() - started

    assert bound <= waited < bound + 5
    for future in (running, queued):  # told at once, not after a wait of their own
        assert isinstance(future.exception(timeout=0), ForwardPassTimeout)
    fresh = batching.shared(key)
    assert fresh is not hung
    np.testing.assert_array_equal(fresh(np.ones((1, 2)), run=run), np.full((1, 2), 2.0))
    run.release.set()
    assert hung.join(timeout=10), "the hung batcher's thread did not end"
    assert fresh(np.ones((1, 2)), run=run).shape == (1, 2)


def test_a_call_running_past_the_bound_with_nobody_waiting_is_replaced_on_next_use(bound):
    key = f"wedged-{next(_keys)}"
    run = HungOnce()
    wedged = batching.shared(key)
    abandoned = wedged.submit(np.ones((1, 2)), run=run)  # its caller's own limit ended it

    eventually(lambda: wedged.wedged, 10, "the call to run past the bound")
    fresh = batching.shared(key)

    assert fresh is not wedged
    assert isinstance(abandoned.exception(timeout=0), ForwardPassTimeout)
    np.testing.assert_array_equal(fresh(np.ones((1, 2)), run=run), np.full((1, 2), 2.0))
    run.release.set()
