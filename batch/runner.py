"""Each pair the way the API serves it, at most `in_flight` at a time.

Each pair goes through the gate every entry point shares (`predictions.gate.ask`): a fresh
cached answer is written at once (unless `fresh`); otherwise the pair is queued as a POST
would be, with admission control as the client `batch:<host>` (so a batch holds no more
than one client's share of the service and waits its Retry-After when refused), and
through the same workers, and waited for as every entry point waits (`predictions.awaiting`).

A pair that does not finish within `timeout_s` is written as failed with that reason, and
the batch stops answering for it, but it fails only what is the batch's own:

* a request it joined (another client's pipeline): its own follower row is failed and the
  follow no longer counts against the batch; the pipeline goes on for whoever leads it;
* a request it leads that no other request follows: failed, which frees its admission
  place, so every request the batch made alone ends final;
* a request it leads that others joined meanwhile: left running for them (failing it
  would fail their followers with the batch's reason). The batch disowns its admission
  place (`admission.disown`): it no longer counts in the batch's share, but still among
  the service's places until the pipeline or its deadline ends it, as any request does.

A client joining at the very moment the batch gives up may still find the request failed
with the batch's reason, as a join racing any leader's end finds that end.
"""

from __future__ import annotations

import copy
import socket
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from batch.rows import Row, rows_for
from predictions import admission, awaiting, final, follows, gate
from predictions.gate import Client, Question
from predictions.models import ACTIVE, PredictionRequest, Status

LONGEST_WAIT_SECONDS = 1.0  # then it looks again at refusals' retry times and timeouts


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
        self.awaited = awaiting.Awaited()

    def run(self, pairs: list[tuple[str, int]]) -> Tally:
        try:
            self._run(deque(pairs))
        finally:
            self.awaited.close()
        return self.tally

    def _run(self, waiting: deque[tuple[str, int]]) -> None:
        pending: dict[str, Pending] = {}
        retry_at = 0.0
        while waiting or pending:
            while waiting and len(pending) < self.in_flight and time.monotonic() >= retry_at:
                pair = waiting[0]
                request_id = self._start(pair)
                if isinstance(request_id, gate.Refused):
                    self.tally.refusals += 1
                    retry_at = time.monotonic() + max(1, request_id.retry_after)
                    break
                waiting.popleft()
                if request_id:
                    pending[request_id] = Pending(pair, time.monotonic() + self.timeout_s)
            can_start = waiting and len(pending) < self.in_flight
            if can_start and time.monotonic() >= retry_at:
                continue
            self._collect(pending, LONGEST_WAIT_SECONDS if pending else 0.0)
            if not pending and waiting:  # refused: nothing to wait for but the Retry-After
                time.sleep(max(0.0, retry_at - time.monotonic()))

    def _start(self, pair: tuple[str, int]) -> str | gate.Refused | None:
        """Ask the gate: a cached answer is written at once (None); a queued pair gives its
        request id; a refusal is handed back to wait its Retry-After."""
        symbol, horizon = pair
        question = Question(
            symbol, horizon, self.strategy, cached=not self.fresh, joinable=not self.fresh
        )
        outcome = gate.ask(question, Client(self.client))
        if isinstance(outcome, gate.Answered):
            self.tally.from_cache += 1
            self._finish(outcome.prediction)
            return None
        if isinstance(outcome, gate.Unservable):
            failed = PredictionRequest(symbol=symbol, horizon=horizon, strategy=self.strategy)
            failed.status, failed.error = Status.FAILED, outcome.reason
            self._finish(failed)
            return None
        if isinstance(outcome, gate.Refused):
            return outcome
        self.awaited.add(str(outcome.request.id))
        return str(outcome.request.id)

    def _collect(self, pending: dict[str, Pending], seconds: float) -> None:
        """Write what ended (waiting up to `seconds` for the first); give up what timed out."""
        for request in self.awaited.ended(seconds):
            if pending.pop(str(request.id), None) is not None:
                self._finish(awaiting.answer_of(request))
        now = time.monotonic()
        for request_id, waiting in list(pending.items()):
            if now > waiting.give_up_at:
                del pending[request_id]
                self._finish(self._give_up(request_id))

    def _give_up(self, request_id: str) -> PredictionRequest:
        """Stop waiting for a request by the module's rule; what the batch writes for it."""
        reason = f"The batch stopped waiting for it after {self.timeout_s:.0f} s."
        request = PredictionRequest.objects.get(id=request_id)
        leader_id = request.answered_by_id  # read answered_by only once it is final
        if leader_id is None and request.followers.filter(status__in=ACTIVE).exists():
            admission.disown(request_id, self.client)
            request.refresh_from_db()
            if request.is_final:  # it ended meanwhile: its answer, as if waited for
                return _written(request)
            timed_out = copy.copy(request)
            timed_out.status, timed_out.error = Status.FAILED, reason
            return timed_out
        final.fail(request, reason)
        if leader_id is not None:
            follows.forget(self.client, [str(leader_id)])
        request.refresh_from_db()
        return _written(request)

    def _finish(self, prediction: PredictionRequest) -> None:
        rows = rows_for(prediction)
        self.write(rows)
        if rows[0]["status"] == Status.DONE:
            self.tally.done += 1
        else:
            self.tally.failed += 1


def _written(request: PredictionRequest) -> PredictionRequest:
    """What the batch writes for a request that ended: the answer when done (its own or
    the one it joined), else the request's own row and reason."""
    return awaiting.answer_of(request) if request.status == Status.DONE else request
