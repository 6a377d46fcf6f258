"""Run by test_supervisor_cleanup: starts children the way the experiment does, then waits.

python -m tests.loadtests.supervised_script PID_LOG wait|fail
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from devstack.supervisor import Interrupted, Supervisor, handle_signals


def main() -> int:
    pid_log, mode = Path(sys.argv[1]), sys.argv[2]
    sup = Supervisor(restart=False, pid_log=pid_log, grace_s=3)
    with handle_signals():
        try:
            sup.add("sleeper", ["sleep", "300"])
            # A child that forks its own child, like Celery's pool or gunicorn's workers,
            # and ignores SIGTERM, so only the KILL after the grace period stops it.
            sup.add(
                "forker",
                ["sh", "-c", f"trap '' TERM; sleep 300 & echo $! >> {pid_log}.grandchildren; wait"],
            )
            grandchild = Path(f"{pid_log}.grandchildren")
            for _ in range(200):  # the forker has forked once it wrote its child's pid
                if grandchild.exists() and grandchild.read_text().strip():
                    break
                time.sleep(0.05)
            print("started", flush=True)
            if mode == "fail":
                raise RuntimeError("a configuration failed")
            time.sleep(300)
        except Interrupted:
            return 130
        finally:
            sup.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
