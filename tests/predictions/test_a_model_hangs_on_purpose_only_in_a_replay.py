"""FAULT_HANG holds a model back on purpose (the tests of the latency objective): like
FAULT_INJECTION it is refused outside a replay and in production, and a malformed value
fails at start-up."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.postgres


def start(**env: str) -> subprocess.CompletedProcess[str]:
    code = "import django; django.setup()"
    full = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", **env}
    return subprocess.run([sys.executable, "-c", code], env=full, capture_output=True, text=True)


@pytest.mark.parametrize("clock", ["live", "replay"])
def test_a_hang_is_refused_outside_a_replay(clock):
    run = start(FAULT_HANG="ridge:5", MARKET_CLOCK=clock)
    if clock == "live":
        assert run.returncode != 0 and "only with MARKET_CLOCK=replay" in run.stderr
    else:
        assert run.returncode == 0, run.stderr


def test_a_malformed_hang_fails_at_start_up():
    run = start(FAULT_HANG="ridge", MARKET_CLOCK="replay")
    assert run.returncode != 0 and "FAULT_HANG must look like ridge:5" in run.stderr
