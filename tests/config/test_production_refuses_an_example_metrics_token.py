"""DEPLOYMENT=production refuses the published example METRICS_TOKEN (vault.example.yml's)
and any token shorter than 32 characters at start-up, without showing it; a random token,
a generated one and development's anything are accepted."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.support.processes import ROOT

KEY = secrets.token_urlsafe(50)
VAULT_EXAMPLE = Path(ROOT) / "playbooks" / "vault.example.yml"
EXAMPLE = yaml.safe_load(VAULT_EXAMPLE.read_text())["vault_stockserve_metrics_token"]


def start(tmp_path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "SECRET_KEY": KEY,
               "VAR_DIR": str(tmp_path / "var"), **env}  # fmt: skip
    return subprocess.run([sys.executable, "-c", "import django; django.setup()"], cwd=ROOT,
                          env=environ, capture_output=True, text=True)  # fmt: skip


@pytest.mark.parametrize(
    "token",
    [EXAMPLE, "change-me", "Q7xw2LpV9rKdZt4HmYbN8cXfJ3sE6u", "ab" * 20],
    ids=["example", "placeholder", "short-31", "repetitive"],
)
def test_production_refuses_an_example_short_or_repetitive_token(tmp_path, token):
    run = start(tmp_path, DEPLOYMENT="production", METRICS_TOKEN=token)
    assert run.returncode != 0 and "METRICS_TOKEN is an example or too weak" in run.stderr
    assert token not in run.stderr


def test_production_accepts_a_random_or_generated_token_and_development_any(tmp_path):
    random_token = secrets.token_urlsafe(32)
    assert start(tmp_path, DEPLOYMENT="production", METRICS_TOKEN=random_token).returncode == 0
    generated = start(tmp_path, DEPLOYMENT="production", METRICS_TOKEN="")
    assert generated.returncode == 0, generated.stderr[-500:]
    assert len((tmp_path / "var" / "metrics_token").read_text()) >= 32
    assert start(tmp_path, DEPLOYMENT="development", METRICS_TOKEN=EXAMPLE).returncode == 0
