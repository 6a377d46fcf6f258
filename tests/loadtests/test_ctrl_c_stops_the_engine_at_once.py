"""Ctrl-C stops a load run at once, though the engine's event loop (uvloop) would swallow
an exception raised by a signal handler in its own thread: the loop runs in a thread of
its own while the caller's thread waits, where `handle_signals` raises."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = """
import sys
from loadtests import engine
from devstack.supervisor import Interrupted, handle_signals

job = engine.one_request("GET", "/")
arrivals = [engine.Arrival(at, "http", "x", job) for at in engine.steady(1, 120)]
try:
    with handle_signals():
        # The first arrival's row says the engine is running (nothing listens on port 9).
        engine.run("http://127.0.0.1:9", arrivals, lambda row: print("running", flush=True),
                   drain_s=5)
except Interrupted as exc:
    print(f"interrupted by {exc}", flush=True)
    sys.exit(130)
"""


def test_a_two_minute_run_stops_on_sigint():
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "running"
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)

    output, _ = proc.communicate(timeout=60)

    assert proc.returncode == 130 and "interrupted by SIGINT" in output
    assert time.monotonic() - sent < 30  # not the two minutes of arrivals
