"""The playbooks refuse example secrets and a public Redis before touching a host: run as
an operator runs them (`ansible-playbook`), against this machine over a local connection,
they stop at their first task with a sentence that names the variable, never its value."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

PLAYBOOKS = Path(__file__).resolve().parents[2] / "playbooks"
GOOD_KEY = "k" + "0123456789abcdefghij" * 3
GOOD = {
    "stockserve_secret_key": GOOD_KEY,
    "stockserve_database_url": "postgres://stockserve:s3cret-pw@10.0.0.7:5432/stockserve",
    "stockserve_redis_url": "redis://:a-long-redis-password@10.0.0.5:6379/0",
    "stockserve_redis_password": "a-long-redis-password",
}


def play(tmp_path: Path, playbook: str, group: str, extravars: dict[str, object]):
    host = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    groups: dict[str, object] = {group: {"hosts": {"localhost": host}}}
    if group.startswith("workers_"):  # as in the example inventory
        groups = {"workers": {"children": groups}}
    inventory = {"all": {"children": groups}}
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump(inventory))
    (tmp_path / "vars.yml").write_text(yaml.safe_dump(extravars))
    env = {**os.environ, "ANSIBLE_CONFIG": str(PLAYBOOKS / "ansible.cfg")}
    env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"
    argv = ["ansible-playbook", "-i", str(tmp_path / "inventory.yml"), playbook]
    argv += ["--limit", "localhost", "-e", f"@{tmp_path / 'vars.yml'}"]
    return subprocess.run(argv, cwd=PLAYBOOKS, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize(
    ("changes", "sentence"),
    [
        ({"stockserve_secret_key": "change-me-to-50-random-characters"}, "stockserve_secret_key"),
        ({"stockserve_secret_key": "a" * 60}, "stockserve_secret_key"),
        (
            {"stockserve_database_url": "postgres://stockserve:change-me@db.example.com:5432/x"},
            "stockserve_database_url",
        ),
    ],
)
def test_a_worker_is_not_given_example_secrets(tmp_path, changes, sentence):
    result = play(tmp_path, "add_worker.yml", "workers_cpu", GOOD | changes)
    assert result.returncode != 0
    assert "Refuse" in result.stdout and sentence in result.stdout
    assert "changed=0" in result.stdout  # it stopped before changing anything
    for value in changes.values():
        assert value not in result.stdout  # the message names the variable, not the value


@pytest.mark.parametrize(
    ("changes", "sentence"),
    [
        ({"stockserve_redis_password": "change-me"}, "vault_stockserve_redis_password"),
        ({"redis_bind": "0.0.0.0"}, "redis_bind must list loopback or private addresses"),
        ({"redis_bind": "10.0.0.5 203.0.113.9"}, "redis_bind must list loopback or private"),
    ],
)
def test_redis_is_not_set_up_public_or_with_an_example_password(tmp_path, changes, sentence):
    result = play(tmp_path, "site.yml", "redis", GOOD | changes)
    assert result.returncode != 0
    assert sentence in result.stdout and "changed=0" in result.stdout
