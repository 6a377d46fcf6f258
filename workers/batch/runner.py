"""Each pair the way the API serves it, at most `in_flight` at a time.

A fresh cached answer is written at once (unless `fresh`); otherwise the pair goes through
the same submission as a POST, with admission control as the client `batch:<host>` (so a
batch holds no more than one client's share of the service and waits its Retry-After
when refused), and through the same workers. A pair that does not finish within
`timeout_s` is failed with that reason, so every request the batch made ends final.
"""

from __future__ import annotations

import socket
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from predictions.admission import in_flight_limit
from predictions.models import PredictionRequest, Status
from predictions.submission import Admission, NotAdmitted, SymbolNotServed, submit
from workers import pipeline, routing
from workers.batch.rows import Row, rows_for

POLL_SECONDS = 0.25


@dataclass
class Tally:
    done: int = 0
    failed: int = 0
    from_cache: int = 0
    refusals: int = 0


@dataclass(frozen=True)
class Pending:
    pair: tuple[str, int]
    give_up_at: float


class BatchRunner:
    def __init__(
        self,
        strategy: str,
        write: Callable[[list[Row]], None],
        *,
        in_flight: int,
        fresh: bool,
        timeout_s: float,
    ) -> None:
        self.strategy = strategy
        self.write = write
        self.in_flight = in_flight
        self.fresh = fresh
        self.timeout_s = timeout_s
        self.client = f"batch:{socket.gethostname()}"
        self.tally = Tally()

    def run(self, pairs: list[tuple[str, int]]) -> Tally:
        waiting = deque(pairs)
        pending: dict[str, Pending] = {}
        retry_at = 0.0
        while waiting or pending:
            while waiting and len(pending) < self.in_flight and time.monotonic() >= retry_at:
                pair = waiting[0]
                try:
                    request_id = self._start(pair)
                except NotAdmitted as refused:
                    self.tally.refusals += 1
                    retry_at = time.monotonic() + max(1, refused.decision.retry_after)
                    break
                waiting.popleft()
                if request_id:
                    pending[request_id] = Pending(pair, time.monotonic() + self.timeout_s)
            self._collect(pending)
            if pending or waiting:
                time.sleep(POLL_SECONDS)
        return self.tally

    def _start(self, pair: tuple[str, int]) -> str | None:
        """Write a cached answer at once (None), or submit the pair (its request id)."""
        symbol, horizon = pair
        if not self.fresh:
            answer = PredictionRequest.objects.answer_for(symbol, horizon)
            if answer is not None:
                answer.share()
                self.tally.from_cache += 1
                self._finish(answer)
                return None
        gate = Admission(self.client, in_flight_limit(routing.model_processes()))
        try:
            submission = submit(symbol, horizon, self.strategy, use_cache=not self.fresh, gate=gate)
        except SymbolNotServed as exc:
            failed = PredictionRequest(symbol=symbol, horizon=horizon, strategy=self.strategy)
            failed.status, failed.error = Status.FAILED, str(exc)
            self._finish(failed)
            return None
        if not submission.joined:
            pipeline.dispatch(submission.request)
        return str(submission.request.id)

    def _collect(self, pending: dict[str, Pending]) -> None:
        final = PredictionRequest.objects.filter(
            id__in=list(pending), status__in=[Status.DONE, Status.FAILED]
        ).select_related("answered_by")
        for request in final:
            del pending[str(request.id)]
            self._finish(request.answered_by or request)
        now = time.monotonic()
        for request_id, waiting in list(pending.items()):
            if now > waiting.give_up_at:
                request = PredictionRequest.objects.get(id=request_id)
                request.mark_failed(
                    f"The batch stopped waiting for it after {self.timeout_s:.0f} s."
                )
                request.refresh_from_db()
                del pending[request_id]
                self._finish(request)

    def _finish(self, prediction: PredictionRequest) -> None:
        rows = rows_for(prediction)
        self.write(rows)
        if rows[0]["status"] == Status.DONE:
            self.tally.done += 1
        else:
            self.tally.failed += 1
