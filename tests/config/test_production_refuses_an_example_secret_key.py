"""DEPLOYMENT=production refuses an example or weak SECRET_KEY at start-up, and accepts a
random one; the provisioned web tier is bound to loopback behind its proxy and runs as
production."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.support.processes import ROOT

PLAYBOOKS = Path(ROOT) / "playbooks"


def start(**env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", **env}
    code = "import django; django.setup()"
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=environ, capture_output=True, text=True
    )


@pytest.mark.parametrize(
    "key",
    [
        "change-me-in-production",  # docker-compose.yml's default
        "x" * 60,
        "django-insecure-0123456789abcdefghijklmnopqrstuvwxyz",
        "short-but-random-Q7x",
    ],
)
def test_production_refuses_an_example_or_weak_key(key):
    run = start(DEPLOYMENT="production", SECRET_KEY=key)
    assert run.returncode != 0 and "SECRET_KEY is an example or too weak" in run.stderr
    assert key not in run.stderr  # the refusal never shows the key


def test_production_accepts_a_random_key_and_development_any():
    assert start(DEPLOYMENT="production", SECRET_KEY=secrets.token_urlsafe(50)).returncode == 0
    assert start(DEPLOYMENT="development", SECRET_KEY="change-me-in-production").returncode == 0


def test_the_provisioned_web_tier_listens_on_loopback_as_production():
    defaults = yaml.safe_load((PLAYBOOKS / "roles/web/defaults/main.yml").read_text())
    assert defaults["web_host"] == "127.0.0.1" and defaults["web_num_proxies"] == 1
    env = (PLAYBOOKS / "roles/web/templates/web.env.j2").read_text()
    assert "DEPLOYMENT=production" in env and "NUM_PROXIES={{ web_num_proxies | int }}" in env
