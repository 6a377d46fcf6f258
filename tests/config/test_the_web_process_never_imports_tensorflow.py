"""The web process (WSGI and ASGI) answers and dispatches every strategy without TensorFlow."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support.processes import ROOT, database_url_for_workers

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]

SCRIPT = """
import json, sys
import config.wsgi, config.asgi
from django.test import Client
from predictions.models import STRATEGIES
client = Client()
codes = []
for strategy in STRATEGIES:
    body = {"symbol": "MSFT", "horizon": 3, "strategy": strategy, "use_cache": False}
    response = client.post("/api/v1/predictions/", body, content_type="application/json")
    codes.append(response.status_code)
codes.append(client.get("/").status_code)
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("tensorflow", "keras"))
print(json.dumps({"codes": codes, "heavy": heavy}))
"""


def test_importing_both_applications_and_submitting_leaves_tensorflow_out():
    env = {
        **os.environ,
        "DATABASE_URL": database_url_for_workers(),
        "ALLOWED_HOSTS": "testserver",
        "ADMISSION_MAX_IN_FLIGHT": "100",
        "ANONYMOUS_FRESH_RUNS": "1",
    }
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["codes"] == [202, 202, 202, 200]
    assert report["heavy"] == []
