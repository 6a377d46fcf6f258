"""Inference for many concurrent predictions collected into one call (TensorFlow-free).

Why: a network's forward pass costs nearly the same for one window as for hundreds (on
this machine's CPU and far more on a GPU), so a worker serving many requests at once
answers them fastest together. Clipper's adaptive batching: requests queue in front of
the model; one thread takes as many as the batch size allows and runs them in one call;
the batch size follows AIMD under a latency objective (grown by a step while full
batches finish in time, cut by a tenth when one does not).

The batcher does not hold a request back to fill a batch unless told to (`max_wait_s`):
batches form by themselves from what arrives while the previous one runs, so a quiet
worker answers at once. With a wait, a request still never waits past its objective:
the batch leaves when its oldest request would otherwise miss it, however few it holds.

Requests of one network with different weights (each symbol's LSTM) share a batcher, one
per compiled network and device: a request names its weights (`group`) and brings the call
that loads them (`run`), and a batch holds one group's requests.

No caller waits forever (`wait_s`, a worker's stage soft time limit): a forward pass that
hangs fails every request waiting on it with ForwardPassTimeout, and the batcher is
retired, so the next caller gets a new one instead of queueing behind the hung call.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable
from concurrent.futures import Future, InvalidStateError
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field

import numpy as np

from .base import ForecastError

RunBatch = Callable[[np.ndarray], np.ndarray]
# Outside a worker (tests, `make evaluate`): a wait as long as Celery's default soft limit.
DEFAULT_WAIT_S = 90.0


class ForwardPassTimeout(ForecastError):
    """A forward pass did not answer within the wait its caller may spend on it."""


class AIMD:
    """Batch size under a latency objective: additive increase, multiplicative decrease."""

    def __init__(
        self,
        objective_s: float,
        *,
        start: int = 1,
        step: int = 4,
        backoff: float = 0.9,
        ceiling: int = 8192,
    ) -> None:
        if objective_s <= 0:
            raise ValueError("the latency objective must be positive")
        if not 0 < backoff < 1 or step < 1 or not 1 <= start <= ceiling:
            raise ValueError("AIMD needs 0 < backoff < 1, step >= 1, 1 <= start <= ceiling")
        self.objective_s = objective_s
        self.size = start
        self.step = step
        self.backoff = backoff
        self.ceiling = ceiling

    def observe(self, rows: int, latency_s: float) -> None:
        """A batch of `rows` whose oldest request waited and ran `latency_s` in all.

        Missed: cut the size. Met with a full batch (slack, and demand to use it): grow by
        the step, or to `rows` when one request brought more than the size (it went alone
        and met the objective, so batches that large are known to). A batch that left
        part-empty says nothing about a larger size, so it changes nothing.
        """
        if latency_s > self.objective_s:
            self.size = max(1, min(self.size - 1, math.floor(self.size * self.backoff)))
        elif rows >= self.size:
            self.size = min(self.ceiling, max(self.size + self.step, rows))


@dataclass
class _Request:
    rows: np.ndarray
    arrived: float
    group: Hashable = None
    run: RunBatch | None = None
    future: Future[np.ndarray] = field(default_factory=Future)


def _settle(future: Future[np.ndarray], result: np.ndarray | BaseException) -> None:
    """Answer a future once: a retired batcher has already failed the ones it held."""
    with contextlib.suppress(InvalidStateError):
        if isinstance(result, BaseException):
            future.set_exception(result)
        else:
            future.set_result(result)


@dataclass(frozen=True)
class BatchRecord:
    """One call the batcher made: when, how many rows, the size allowed then, its timing."""

    at: float  # seconds since the batcher started
    requests: int
    rows: int
    limit: int
    run_s: float
    oldest_latency_s: float
    met: bool


class AdaptiveBatcher:
    """Requests from any thread, answered by one thread in batches sized by AIMD.

    `run_batch` maps stacked rows (n, ...) to outputs (n, ...), row for row; a request may
    bring its own (`submit(run=)`), used for its group's batch. Either is only ever called
    from the batcher's own thread, so it needs no lock of its own.
    """

    def __init__(
        self,
        run_batch: RunBatch | None,
        objective_s: float,
        *,
        controller: AIMD | None = None,
        name: str = "batcher",
        history: int = 10_000,
        max_wait_s: float = 0.0,
        wait_s: float = DEFAULT_WAIT_S,
        on_batch: Callable[[BatchRecord], None] | None = None,
    ) -> None:
        if wait_s <= 0:
            raise ValueError("a caller's wait must be positive")
        self.run_batch = run_batch
        self.objective_s = objective_s
        self.controller = controller or AIMD(objective_s)
        self.name = name
        self.max_wait_s = max_wait_s
        self.wait_s = wait_s
        self.on_batch = on_batch
        self.records: deque[BatchRecord] = deque(maxlen=history)
        self.retired: str | None = None  # why it serves no more, once it does not
        self._queue: deque[_Request] = deque()
        self._queued_rows = 0
        self._running: list[_Request] = []
        self._running_since: float | None = None
        self._cond = threading.Condition()
        self._run_estimate_s = 0.0  # moving average of a batch's run time
        self._started = time.monotonic()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def submit(
        self, rows: np.ndarray, *, group: Hashable = None, run: RunBatch | None = None
    ) -> Future[np.ndarray]:
        """Queue rows (n, ...) for one forward pass; the future gets their n outputs.
        `group`: requests that may share a call (the same weights); `run`: the call for
        this group's batches (the batcher's own `run_batch` when None)."""
        request = _Request(np.asarray(rows), time.monotonic(), group, run)
        with self._cond:
            if self.retired is not None:
                _settle(request.future, ForwardPassTimeout(self.retired))
                return request.future
            self._queue.append(request)
            self._queued_rows += len(request.rows)
            self._cond.notify()
        return request.future

    def __call__(
        self, rows: np.ndarray, *, group: Hashable = None, run: RunBatch | None = None
    ) -> np.ndarray:
        """Submit and wait, at most `wait_s`: what a request thread calls instead of the
        network itself. A wait that runs out retires the batcher (ForwardPassTimeout)."""
        future = self.submit(rows, group=group, run=run)
        try:
            return future.result(timeout=self.wait_s)
        except FutureTimeout:
            self.retire(
                f"{self.name}: the forward pass did not answer within {self.wait_s:g} s "
                "(the stage's soft time limit); its batcher was replaced"
            )
            return future.result(timeout=0)  # the retirement's error, or a late answer

    def join(self, timeout: float | None = None) -> bool:
        """Wait for its thread to end (after `retire`); whether it has."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def wedged(self) -> bool:
        """Retired, or its call has run longer than any caller may wait (a caller that
        stopped waiting for its own time limit, a prefork worker's, did not retire it)."""
        since = self._running_since
        return self.retired is not None or (
            since is not None and time.monotonic() - since > self.wait_s
        )

    def retire(self, why: str) -> None:
        """Serve no more: every request it holds, queued or in the running call, fails
        with `why` now; its thread ends once the running call (if it ever does) returns."""
        with self._cond:
            if self.retired is not None:
                return
            self.retired = why
            held = [*self._running, *self._queue]
            self._queue.clear()
            self._queued_rows = 0
            self._cond.notify_all()
        for request in held:
            _settle(request.future, ForwardPassTimeout(why))

    def _leave_at(self, oldest: _Request) -> float:
        """How long a batch may wait to fill: `max_wait_s`, and never so long that its oldest
        request misses the objective (its expected run time, and a little more for the
        thread to wake up, kept free)."""
        if not math.isfinite(self.objective_s):
            return oldest.arrived + self.max_wait_s
        wake_up_s = 0.002 + 0.02 * self.objective_s
        latest = oldest.arrived + self.objective_s - self._run_estimate_s - wake_up_s
        return min(oldest.arrived + self.max_wait_s, latest)

    def _take(self) -> list[_Request] | None:
        """Wait for a first request, then (with `max_wait_s`) for the batch to fill or its
        time to leave; take the head and the queued requests of its group, in order, up to
        the batch size. None once retired."""
        with self._cond:
            while not self._queue and self.retired is None:
                self._cond.wait()
            while self.retired is None and self._queued_rows < self.controller.size:
                remaining = self._leave_at(self._queue[0]) - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
            if self.retired is not None:
                return None
            head = self._queue.popleft()
            batch, rows, passed = [head], len(head.rows), list[_Request]()
            while self._queue and rows < self.controller.size:
                request = self._queue.popleft()
                if request.group == head.group and rows + len(request.rows) <= self.controller.size:
                    rows += len(request.rows)
                    batch.append(request)
                else:
                    passed.append(request)  # another group's, or too large now: next time
            self._queue.extendleft(reversed(passed))
            self._queued_rows -= rows
            self._running, self._running_since = batch, time.monotonic()
            return batch

    def _serve(self) -> None:
        while (batch := self._take()) is not None:
            started = time.monotonic()
            run = batch[0].run or self.run_batch
            try:
                if run is None:
                    raise ForecastError(f"{self.name}: a request brought no forward pass")
                outputs = np.asarray(run(np.concatenate([r.rows for r in batch])))
            except Exception as exc:  # every request of the batch learns why
                for request in batch:
                    _settle(request.future, exc)
                self._done_running()
                continue
            finished = time.monotonic()
            offset = 0
            for request in batch:
                _settle(request.future, outputs[offset : offset + len(request.rows)])
                offset += len(request.rows)
            self._done_running()
            if self.retired is None:
                self._account(batch, offset, started, finished)

    def _done_running(self) -> None:
        with self._cond:
            self._running, self._running_since = [], None

    def _account(self, batch: list[_Request], rows: int, started: float, finished: float) -> None:
        run_s = finished - started
        self._run_estimate_s = (
            run_s if not self.records else 0.8 * self._run_estimate_s + 0.2 * run_s
        )
        latency_s = finished - batch[0].arrived
        limit = self.controller.size
        self.controller.observe(rows, latency_s)
        record = BatchRecord(
            at=started - self._started,
            requests=len(batch),
            rows=rows,
            limit=limit,
            run_s=run_s,
            oldest_latency_s=latency_s,
            met=latency_s <= self.objective_s,
        )
        self.records.append(record)
        if self.on_batch is not None:
            with contextlib.suppress(Exception):  # a statistic never stops the batcher
                self.on_batch(record)


def padded_to_powers_of_two(run_batch: RunBatch, ceiling: int = 8192) -> RunBatch:
    """`run_batch` fed only batches of 1, 2, 4, ... rows (zero rows added, their outputs
    dropped), so that a traced network (TensorFlow's functions) meets a handful of shapes,
    each traced once, instead of a new one at each new batch size (a 50-100 ms retrace in
    the middle of a request's latency, measured by the lab's bench-batching study).
    Call `warm(run)` once to trace them all before serving."""

    def run(rows: np.ndarray) -> np.ndarray:
        n = len(rows)
        size = 1 << max(0, (n - 1).bit_length())
        if size == n or n > ceiling:
            return np.asarray(run_batch(rows))
        padding = np.zeros((size - n, *rows.shape[1:]), dtype=rows.dtype)
        return np.asarray(run_batch(np.concatenate([rows, padding])))[:n]

    return run


def warm(run_batch: RunBatch, row: np.ndarray, ceiling: int = 8192) -> None:
    """Run every power-of-two batch size up to `ceiling` once (tracing them up front)."""
    size = 1
    while size <= ceiling:
        run_batch(np.repeat(row[None], size, axis=0))
        size *= 2


@dataclass(frozen=True)
class Config:
    """How this process's shared batchers run (a worker sets it from its settings)."""

    objective_s: float = 0.1  # 0: no batching, each request its own forward pass
    max_wait_s: float = 0.0
    wait_s: float = DEFAULT_WAIT_S
    on_batch: Callable[[BatchRecord], None] | None = None
    start: int = 1  # AIMD's first batch size


_config = Config()
_shared: dict[str, tuple[AdaptiveBatcher, Config]] = {}
_shared_pid = os.getpid()
_shared_lock = threading.Lock()


def configure(config: Config) -> None:
    """Set how shared batchers run (each takes it on its next use)."""
    global _config
    _config = config


def configured() -> Config:
    return _config


def shared(key: str, warm: Callable[[], None] | None = None) -> AdaptiveBatcher:
    """This process's batcher for `key` (a compiled network on a device), made on first use
    after `warm` (every batch shape traced), made again when the one before is wedged
    (retired, or its call ran past the wait); a configuration set since is applied to it.

    Per process: a forked pool process starts with none (its parent's threads did not
    come along), so each worker process adapts its own batch size to its own device.
    """
    global _shared_pid
    with _shared_lock:
        if _shared_pid != os.getpid():
            _shared.clear()
            _shared_pid = os.getpid()
        config = _config
        batcher, made_under = _shared.get(key, (None, None))
        if batcher is None and warm is not None:
            warm()
        if batcher is not None and batcher.wedged:
            batcher.retire(f"{key}: its forward pass ran past {batcher.wait_s:g} s")
        if batcher is None or batcher.wedged:
            controller = _controller(config)
            batcher = AdaptiveBatcher(
                None,
                controller.objective_s,
                controller=controller,
                name=key,
                on_batch=config.on_batch,
                max_wait_s=config.max_wait_s,
                wait_s=config.wait_s,
            )
        elif made_under != config:  # the worker's settings, set after its first use
            batcher.controller = _controller(config)
            batcher.objective_s = batcher.controller.objective_s
            batcher.max_wait_s, batcher.wait_s = config.max_wait_s, config.wait_s
            batcher.on_batch = config.on_batch
        _shared[key] = (batcher, config)
        return batcher


def _controller(config: Config) -> AIMD:
    """AIMD under the configured objective; an objective of 0: no batching, one request
    per call, under no objective."""
    if config.objective_s > 0:
        return AIMD(config.objective_s, start=config.start)
    return AIMD(math.inf, ceiling=1)
