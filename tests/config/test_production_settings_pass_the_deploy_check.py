"""DEPLOYMENT=production makes `manage.py check --deploy` clean; the default does not."""

from __future__ import annotations

import os
import secrets
import subprocess

from launch import process_catalog
from tests.support.processes import ROOT


def deploy_check(**env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "SECRET_KEY": secrets.token_urlsafe(60), **env}
    environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)  # the browser tests' setting, not a deploy's
    return subprocess.run(
        process_catalog.manage("check", "--deploy", "--fail-level", "WARNING").argv(),
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_production_settings_pass():
    # The queue's own Redis (QUEUE_REDIS_URL): without it, workers.W001 warns.
    out = deploy_check(DEPLOYMENT="production", QUEUE_REDIS_URL="redis://127.0.0.1:6380/0")
    assert out.returncode == 0, out.stderr
    assert "no issues" in out.stdout


def test_development_settings_are_reported():
    out = deploy_check(DEPLOYMENT="development")
    assert out.returncode != 0
    for warning in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert warning in out.stderr
