"""The old name of the measurement supervisor, kept only for a test outside loadtests/
(tests/integration/test_chaos_every_request_ends_done.py) until it imports
`devstack.supervisor` itself: there is one supervisor, `devstack.supervisor.Supervisor`."""

from __future__ import annotations

from pathlib import Path

from devstack import supervisor


def Supervisor(pid_log: Path | None = None, grace_s: float = 10.0) -> supervisor.Supervisor:  # noqa: N802
    return supervisor.Supervisor(restart=False, pid_log=pid_log, grace_s=grace_s)
