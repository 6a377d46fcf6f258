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
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field

import numpy as np

RunBatch = Callable[[np.ndarray], np.ndarray]


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
    future: Future[np.ndarray] = field(default_factory=Future)


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

    `run_batch` maps stacked rows (n, ...) to outputs (n, ...), row for row; it is only ever
    called from the batcher's own thread, so it needs no lock of its own.
    """

    def __init__(
        self,
        run_batch: RunBatch,
        objective_s: float,
        *,
        controller: AIMD | None = None,
        name: str = "batcher",
        history: int = 10_000,
        max_wait_s: float = 0.0,
        on_batch: Callable[[BatchRecord], None] | None = None,
    ) -> None:
        self.run_batch = run_batch
        self.objective_s = objective_s
        self.controller = controller or AIMD(objective_s)
        self.name = name
        self.max_wait_s = max_wait_s
        self.on_batch = on_batch
        self.records: deque[BatchRecord] = deque(maxlen=history)
        self._queue: deque[_Request] = deque()
        self._queued_rows = 0
        self._cond = threading.Condition()
        self._run_estimate_s = 0.0  # moving average of a batch's run time
        self._started = time.monotonic()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def submit(self, rows: np.ndarray) -> Future[np.ndarray]:
        """Queue rows (n, ...) for one forward pass; the future gets their n outputs."""
        request = _Request(np.asarray(rows), time.monotonic())
        with self._cond:
            self._queue.append(request)
            self._queued_rows += len(request.rows)
            self._cond.notify()
        return request.future

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        """Submit and wait: what a request thread calls instead of the network itself."""
        return self.submit(rows).result()

    def _leave_at(self, oldest: _Request) -> float:
        """How long a batch may wait to fill: `max_wait_s`, and never so long that its oldest
        request misses the objective (its expected run time, and a little more for the
        thread to wake up, kept free)."""
        wake_up_s = 0.002 + 0.02 * self.objective_s
        latest = oldest.arrived + self.objective_s - self._run_estimate_s - wake_up_s
        return min(oldest.arrived + self.max_wait_s, latest)

    def _take(self) -> list[_Request]:
        """Wait for a first request, then (with `max_wait_s`) for the batch to fill or its
        time to leave; take the queue's head up to the batch size."""
        with self._cond:
            while not self._queue:
                self._cond.wait()
            while self._queued_rows < self.controller.size:
                remaining = self._leave_at(self._queue[0]) - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
            batch, rows = [self._queue.popleft()], 0
            rows = len(batch[0].rows)
            while self._queue and rows + len(self._queue[0].rows) <= self.controller.size:
                rows += len(self._queue[0].rows)
                batch.append(self._queue.popleft())
            self._queued_rows -= rows
            return batch

    def _serve(self) -> None:
        while True:
            batch = self._take()
            started = time.monotonic()
            try:
                outputs = np.asarray(self.run_batch(np.concatenate([r.rows for r in batch])))
            except Exception as exc:  # every request of the batch learns why
                for request in batch:
                    request.future.set_exception(exc)
                continue
            finished = time.monotonic()
            offset = 0
            for request in batch:
                request.future.set_result(outputs[offset : offset + len(request.rows)])
                offset += len(request.rows)
            self._account(batch, offset, started, finished)

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
    the middle of a request's latency, measured under `make bench-batching`).
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


_shared: dict[str, AdaptiveBatcher] = {}
_shared_pid = os.getpid()
_shared_lock = threading.Lock()


def shared(
    key: str,
    make_run: Callable[[], RunBatch],
    objective_s: float,
    on_batch: Callable[[BatchRecord], None] | None = None,
    max_wait_s: float = 0.0,
) -> AdaptiveBatcher:
    """This process's batcher for `key` (a network on a device), made and warmed (every
    batch shape traced) on first use.

    Per process: a forked pool process starts with none (its parent's threads did not
    come along), so each worker process adapts its own batch size to its own device.
    """
    global _shared_pid
    with _shared_lock:
        if _shared_pid != os.getpid():
            _shared.clear()
            _shared_pid = os.getpid()
        batcher = _shared.get(key)
        if batcher is None or batcher.objective_s != objective_s:
            batcher = _shared[key] = AdaptiveBatcher(
                make_run(), objective_s, name=key, on_batch=on_batch, max_wait_s=max_wait_s
            )
        return batcher
