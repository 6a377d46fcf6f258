"""Which lane a request runs in: the usual workers, or the spare one.

Why: anonymous clients' pipelines, admitted within their pool's share, ran on the worker
processes identified clients' pipelines need, and a task already running is not preempted,
so an identified question waited for a process at each stage (the lab's abuse study: its p95 2.2 to
3.9 times the quiet one). Questions no identified client waits for, anonymous clients' and
the service's own (the watchlist, model health's retraining: `precomputed`), take the
spare lane: the `spare` queue, whose worker runs at a lower CPU priority
(SPARE_WORKER_NICE), so the OS shares the cores in the identified work's favour while both
run and leaves the rest to the spare lane. With no live spare worker they run on the usual
queues, as every request did before (`workers.queue_routing.in_lane`).
"""

from __future__ import annotations

from collections.abc import Iterable

from predictions.admission import is_anonymous
from predictions.models import Lane, PredictionRequest

# The one admitted client asking ahead of time (model health's retraining takes no place).
WATCHLIST_CLIENT = "watchlist"


def lane_for(client: str | None, precomputed: bool) -> str:
    """The spare lane for an anonymous client (`anon:`) and for questions asked ahead of
    time, not by a person (the watchlist, model health); the usual lane for the rest."""
    if precomputed or (client is not None and is_anonymous(client)):
        return Lane.SPARE
    return Lane.USUAL


def a_person_waits(owners: Iterable[str]) -> bool:
    """Any of these places' owners (`admission.owners`) is a client of the usual lane: a
    person, a stream or a batch host. A spare-lane request an identified client joined
    (`joined`) keeps its anonymous owner and is not seen here."""
    return any(lane_for(owner, owner == WATCHLIST_CLIENT) == Lane.USUAL for owner in owners)


def joined(leader: PredictionRequest, lane: str) -> None:
    """A question of `lane` joined `leader`: a usual-lane client (an identified one) now
    waits for it, so its tasks from now on take the usual lane (those already queued in
    `spare` stay there)."""
    if lane == Lane.USUAL and leader.lane == Lane.SPARE:
        PredictionRequest.objects.filter(id=leader.id, lane=Lane.SPARE).update(lane=Lane.USUAL)
        leader.lane = Lane.USUAL
