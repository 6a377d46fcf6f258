"""The autoscaling controller: observe every queue, decide, act, record why.

Once per AUTOSCALE_INTERVAL it reads each queue's wait and depth (`workers.queue_wait`,
the numbers the dashboard shows) and the live workers' heartbeats, lets the policy decide,
asks the backend to add or drain a worker, and records each decision with its reason
(`ScalingDecision`, shown on `/workers/` and streamed to the dashboard).

Safe to run twice: only the holder of a Redis lock acts; the lock expires a few intervals
after its holder stops renewing it, and the next controller takes over the workers the
first one added (they are recorded in Redis, `managed.py`).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from typing import Any

import redis
from django.conf import settings
from django.db import close_old_connections

from plumbing.redis_client import get_redis
from provisioning.autoscale import policy
from provisioning.autoscale.backends import (
    Backend,
    LocalWorkers,
    Outcome,
    ScaleError,
    StandbyHosts,
    presence_by_node,
)
from provisioning.autoscale.managed import (
    DRAINING,
    RUNNING,
    STARTING,
    STOPPING,
    Managed,
    all_managed,
)
from provisioning.models import ScalingAction, ScalingDecision
from workers import queue_wait, scaling_feed
from workers.queue_routing import QUEUES

log = logging.getLogger(__name__)
LEADER_KEY = "stockserve:autoscale:leader"


def backend_from_settings() -> Backend:
    if settings.AUTOSCALE_BACKEND == "ansible":
        return StandbyHosts()
    return LocalWorkers()


def policy_from_settings() -> policy.Policy:
    return policy.Policy(
        target_wait=settings.AUTOSCALE_TARGET_WAIT,
        up_delay=settings.AUTOSCALE_UP_DELAY,
        down_delay=settings.AUTOSCALE_DOWN_DELAY,
        cooldown=settings.AUTOSCALE_COOLDOWN,
    )


def observe(
    queue: str,
    state: queue_wait.QueueState,
    alive: dict[str, dict[str, Any]],
    managed: list[Managed],
    per_worker: int,
    at: float,
) -> policy.Observation:
    leaving = [w for w in managed if w.state in (DRAINING, STOPPING)]
    serving = [
        entry
        for node, entry in alive.items()
        if queue in entry.get("queues", []) and not any(w.is_node(node) for w in leaving)
    ]
    starting = [
        w
        for w in managed
        if w.queue == queue and w.state == STARTING and not any(w.is_node(n) for n in alive)
    ]
    spare = 0
    for entry in serving:
        processes = int(entry.get("processes") or entry.get("concurrency") or 1)
        spare += max(0, processes - int(entry.get("active") or 0) - int(entry.get("held") or 0))
    return policy.Observation(
        at=at,
        queue=queue,
        wait=state.wait,
        depth=state.depth,
        workers=len(serving) + len(starting),
        removable=sum(1 for w in managed if w.queue == queue and w.state == RUNNING),
        spare=spare,
        per_worker=per_worker,
    )


class LostLead(Exception):
    """Another controller holds the lead now: this one must not act."""


class Controller:
    def __init__(
        self,
        backend: Backend,
        rule: policy.Policy,
        limits: dict[str, policy.Limits],
        interval: float,
        settle: float | None = None,
    ) -> None:
        self.backend, self.rule, self.limits, self.interval = backend, rule, limits, interval
        # Until workers started alongside have sent a heartbeat, they look absent (and the
        # minimum rule would add one): no decision for `settle` seconds after taking the lead.
        self.settle = settings.AUTOSCALE_SETTLE if settle is None else settle
        self.led_since: float | None = None
        self.memory = {queue: policy.QueueMemory() for queue in limits}
        self.lock = get_redis().lock(LEADER_KEY, timeout=max(5.0, 5 * interval), thread_local=False)
        self.leading = False

    @classmethod
    def from_settings(cls) -> Controller:
        limits = policy.parse_limits(settings.AUTOSCALE_WORKERS, QUEUES)
        return cls(
            backend_from_settings(), policy_from_settings(), limits, settings.AUTOSCALE_INTERVAL
        )

    # --- leadership

    def lead(self) -> bool:
        """Take or keep the lead; False while another controller holds it."""
        try:
            if self.leading:
                self.lock.reacquire()
            else:
                self.leading = bool(self.lock.acquire(blocking=False))
                if self.leading:
                    self.led_since = time.time()
                    log.info("autoscaler: leading (backend %s, %s)", self.backend.name, self.limits)
        except redis.exceptions.LockError:
            log.warning("autoscaler: lost the lead")
            self.leading = False
        return self.leading

    def run(self, stop: threading.Event) -> None:
        try:
            while not stop.is_set():
                started = time.monotonic()
                try:
                    if self.lead():
                        self.tick()
                except redis.exceptions.RedisError:
                    log.warning("autoscaler: Redis unavailable; trying again", exc_info=True)
                except Exception:  # a database blip or a bug: say so, keep watching
                    log.exception("autoscaler: this round failed; trying again")
                finally:
                    close_old_connections()
                stop.wait(max(0.0, self.interval - (time.monotonic() - started)))
        finally:
            if self.leading:
                self.backend.close()
                with contextlib.suppress(redis.exceptions.LockError):
                    self.lock.release()
                self.leading = False

    # --- one round

    def tick(self, now: float | None = None) -> list[ScalingDecision]:
        now = time.time() if now is None else now
        alive = presence_by_node()
        try:
            self._fence()
        except LostLead:
            return []
        recorded = [self._ended(outcome) for outcome in self.backend.step(alive)]
        if self.led_since is not None and now - self.led_since < self.settle:
            return recorded
        states = queue_wait.current(list(self.limits), now=now)
        managed = all_managed()
        for queue, limits in self.limits.items():
            seen = observe(queue, states[queue], alive, managed, self.backend.per_worker, now)
            decision = policy.decide(self.rule, limits, self.memory[queue], seen)
            if decision is not None:
                recorded += self._act(decision, managed, alive)
        return recorded

    def _fence(self) -> None:
        """Before each action: still the leader? The lock is re-checked and extended in one
        atomic step, so a round slower than the lock's timeout cannot act beside the
        controller that took over meanwhile (LostLead ends the round)."""
        if not self.leading:  # a round run on its own (not through run()): take the lock
            self.leading = bool(self.lock.acquire(blocking=False))
            if not self.leading:
                raise LostLead
            return
        try:
            self.lock.reacquire()
        except redis.exceptions.LockError as exc:
            self.leading = False
            log.warning("autoscaler: lost the lead in the middle of a round; not acting")
            raise LostLead from exc

    def _act(
        self, decision: policy.Decision, managed: list[Managed], alive: dict[str, dict[str, Any]]
    ) -> list[ScalingDecision]:
        if decision.action == policy.ADD:
            added: list[ScalingDecision] = []
            for _ in range(decision.count):
                try:
                    self._fence()
                except LostLead:
                    return added
                try:
                    worker = self.backend.start(decision.queue)
                except ScaleError as exc:
                    reason = f"{decision.reason}; {exc}"
                    return [*added, self._record(decision, ScalingAction.HOLD, reason)]
                added.append(
                    self._record(decision, ScalingAction.ADD, decision.reason, worker.name)
                )
            return added
        if decision.action == policy.DRAIN:
            candidates = [w for w in managed if w.queue == decision.queue and w.state == RUNNING]

            def busy(worker: Managed) -> tuple[int, float]:
                entry = alive.get(worker.name, {})
                return int(entry.get("active") or 0) + int(entry.get("held") or 0), -worker.since

            worker = min(candidates, key=busy)  # the idlest, newest first
            try:
                self._fence()
            except LostLead:
                return []
            try:
                self.backend.drain(worker)
            except Exception as exc:  # the broker or a run refused: say so, try later
                failed = f"drain failed: {exc}"
                return [self._record(decision, ScalingAction.FAILED, failed, worker.name)]
            return [self._record(decision, ScalingAction.DRAIN, decision.reason, worker.name)]
        return [self._record(decision, ScalingAction.HOLD, decision.reason)]

    def _ended(self, outcome: Outcome) -> ScalingDecision:
        worker = outcome.worker
        ended = policy.Decision(worker.queue, outcome.action, outcome.reason, 0.0, 0, 0)
        action = ScalingAction.REMOVED if outcome.action == "removed" else ScalingAction.FAILED
        return self._record(ended, action, outcome.reason, worker.name)

    def _record(
        self, decision: policy.Decision, action: str, reason: str, worker: str = ""
    ) -> ScalingDecision:
        row = ScalingDecision.objects.create(
            queue=decision.queue,
            action=action,
            reason=reason[:300],
            wait_seconds=round(decision.wait, 3),
            depth=decision.depth,
            workers=decision.workers,
            worker=worker,
            backend=self.backend.name,
        )
        log.info("autoscaler: %s %s %s: %s", decision.queue, action, worker, reason)
        scaling_feed.publish(row.as_dict())
        return row
