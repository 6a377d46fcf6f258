"""When to add or drain a worker: a pure function of what the controller observed.

No I/O here, so decisions can be replayed from recorded queue series in tests. The rule,
per queue (the shape of Ray Serve's replica autoscaling, on queue wait instead of
requests per replica):

* below the minimum: add, at once;
* p95 wait above the target for `up_delay` seconds: add workers in proportion to how far
  above (the wanted count is workers x wait / target, as Kubernetes' HPA scales on its
  metric), at most doubling or four more at once (HPA's default bound) and never past the
  maximum (at the maximum, say so once); not within `cooldown` of the last change;
* nothing waiting, the wait under a quarter of the target, and a whole worker's worth
  of pool processes idle, for `down_delay` seconds: drain one the controller added
  (never one an operator started, never below the minimum), outside the cooldown.

Drains go one worker at a time. Workers still starting count as workers, so the next
decision sees what the last one did before it adds more.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

ADD, DRAIN, HOLD = "add", "drain", "hold"
IDLE_FRACTION = 0.25
MAX_STEP = 4  # workers one decision may add, unless doubling adds more


@dataclass(frozen=True)
class Policy:
    target_wait: float
    up_delay: float
    down_delay: float
    cooldown: float


@dataclass(frozen=True)
class Limits:
    minimum: int
    maximum: int


@dataclass(frozen=True)
class Observation:
    at: float  # seconds (any clock, the same for every observation)
    queue: str
    wait: float  # p95 queue wait now, seconds
    depth: int  # messages waiting
    workers: int  # consuming the queue, including starting ones, not draining ones
    removable: int  # of those, workers the controller added and may drain
    spare: int  # pool processes not running a task, over the queue's workers
    per_worker: int  # pool processes one added worker brings


@dataclass(frozen=True)
class Decision:
    queue: str
    action: str
    reason: str
    wait: float
    depth: int
    workers: int
    count: int = 1  # workers to add or drain


@dataclass
class QueueMemory:
    """What one queue's decisions depend on besides the current observation."""

    over_since: float | None = None
    idle_since: float | None = None
    last_change: float = -math.inf
    held: bool = False  # a hold was recorded for the current episode of high wait


def _since(start: float | None, now: float, condition: bool) -> float | None:
    """When the condition began to hold without a break (None while it does not)."""
    if not condition:
        return None
    return now if start is None else start


def decide(
    policy: Policy, limits: Limits, memory: QueueMemory, seen: Observation
) -> Decision | None:
    over = seen.wait > policy.target_wait
    idle = (
        seen.depth == 0
        and seen.wait <= policy.target_wait * IDLE_FRACTION
        and seen.spare >= seen.per_worker
    )
    memory.over_since = _since(memory.over_since, seen.at, over)
    memory.idle_since = _since(memory.idle_since, seen.at, idle)
    memory.held = memory.held and over

    def decision(action: str, reason: str, count: int = 1) -> Decision:
        if action == HOLD:
            memory.held = True
        else:
            memory.last_change, memory.held = seen.at, False
            memory.over_since = memory.idle_since = None
        return Decision(seen.queue, action, reason, seen.wait, seen.depth, seen.workers, count)

    if seen.workers < limits.minimum:
        missing = limits.minimum - seen.workers
        return decision(
            ADD, f"{seen.workers} worker(s), below the minimum of {limits.minimum}", missing
        )
    cooling = seen.at - memory.last_change < policy.cooldown
    if memory.over_since is not None and seen.at - memory.over_since >= policy.up_delay:
        above = (
            f"p95 wait {seen.wait:.2f} s above the {policy.target_wait:g} s target for "
            f"{seen.at - memory.over_since:.0f} s, {seen.depth} waiting"
        )
        if seen.workers >= limits.maximum:
            if memory.held:
                return None
            return decision(HOLD, f"{above}; at the maximum of {limits.maximum} worker(s)")
        if cooling:
            return None
        wanted = math.ceil(seen.workers * seen.wait / policy.target_wait)
        # At least one; at most doubling or four more, whichever is more (HPA's default
        # scale-up bound); never past the maximum.
        step = max(seen.workers, MAX_STEP)
        count = max(1, min(wanted - seen.workers, step, limits.maximum - seen.workers))
        return decision(ADD, f"{above}; {count} more", count)
    if memory.idle_since is not None and seen.at - memory.idle_since >= policy.down_delay:
        if cooling or seen.removable == 0 or seen.workers <= limits.minimum:
            return None
        return decision(
            DRAIN,
            f"nothing waiting and p95 wait {seen.wait:.2f} s for "
            f"{seen.at - memory.idle_since:.0f} s, {seen.spare} pool process(es) idle",
        )
    return None


def parse_limits(spec: str, queues: tuple[str, ...]) -> dict[str, Limits]:
    """`io=1-3,cpu=2-6` as {queue: Limits}; ValueError with a sentence when malformed."""
    limits = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        queue, _, bounds = item.partition("=")
        low, _, high = bounds.partition("-")
        if queue.strip() not in queues or not low.strip().isdigit() or not high.strip().isdigit():
            raise ValueError(
                f"AUTOSCALE_WORKERS takes queue=MIN-MAX items such as io=1-3 "
                f"(queues: {', '.join(queues)}), got {item!r}"
            )
        if not 0 <= int(low) <= int(high) or int(high) < 1:
            raise ValueError(f"AUTOSCALE_WORKERS needs 0 <= MIN <= MAX and MAX >= 1, got {item!r}")
        limits[queue.strip()] = Limits(int(low), int(high))
    if not limits:
        raise ValueError("AUTOSCALE_WORKERS names no queue: give e.g. io=1-3,cpu=1-3")
    return limits
