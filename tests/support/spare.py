"""A spare worker for a test: started as `make run` starts one, waited for until warm."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

from celery import current_app

from predictions import worker_holdings
from tests.support.processes import start_worker_process, stop_process, wait_for_worker
from tests.support.waiting import eventually
from workers import presence, queue_routing


def warm(hostname: str) -> bool:
    return any(w["hostname"] == hostname and presence.is_ready(w) for w in presence.alive_workers())


@contextmanager
def spare_worker(consuming: bool = True) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A warm worker on `spare` (one pool process), taking nothing from it unless
    `consuming`; stopped at the end and waited for until its heartbeat is gone. Yields its
    hostname and process."""
    proc = start_worker_process(
        "spare", "spare", concurrency=1, extra_env={"ROUTING_CACHE_SECONDS": "0"}
    )
    try:
        hostname = wait_for_worker("spare@", proc, timeout=120)
        eventually(lambda: warm(hostname), 180, "the spare worker warming up", 0.25)
        if not consuming:
            current_app.control.cancel_consumer(
                "spare", destination=[hostname], reply=True, timeout=10
            )
        queue_routing.forget()
        worker_holdings.forget()
        yield hostname, proc
    finally:
        stop_process(proc)
        eventually(lambda: not presence.consumers_of("spare"), 30, "the spare heartbeat going")
        queue_routing.forget()
        worker_holdings.forget()
