"""docker-compose.yml, the Dockerfile and the playbooks' commands come from one process_catalog,
and docker-compose.yml is one that Compose accepts.

No PyPI package ships the compose specification's JSON schema on its own (compose-spec and
compose-pydantic are parsers with models, no schema); Debian's docker-compose 1.29 ships it
(compose/config/compose_spec.json) and its `config` validates against it with no daemon.
`make packages` installs it."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest
import yaml

from devstack import render
from launch import process_catalog
from launch.process_catalog import ROOT

COMPOSE_SPEC = Path("/usr/lib/python3/dist-packages/compose/config/compose_spec.json")


def test_every_generated_file_is_up_to_date():
    assert render.out_of_date() == [], "run `make generate`"


def test_compose_and_the_playbooks_start_the_same_worker_command():
    worker = process_catalog.worker("cpu", "cpu", 2)
    assert " ".join(worker.args) in render.compose().replace('", "', " ")
    assert '  - "start_worker"' in render.ansible_vars()


def docker_compose_config(path: Path) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("docker-compose")
    if not binary or not COMPOSE_SPEC.exists():
        pytest.fail(
            "docker-compose is not installed: run `make packages` (Debian's docker-compose)."
        )
    command = [binary, "-f", str(path), "--profile", "monitoring", "config", "-q"]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def test_the_compose_file_matches_the_compose_specifications_schema():
    docker_compose_config(ROOT / "docker-compose.yml")  # fails here when not installed
    schema = json.loads(COMPOSE_SPEC.read_text())
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    errors = [e.message for e in jsonschema.Draft201909Validator(schema).iter_errors(compose)]
    assert errors == []


def test_docker_compose_accepts_the_compose_file_and_refuses_a_wrong_one(tmp_path):
    accepted = docker_compose_config(ROOT / "docker-compose.yml")
    assert accepted.returncode == 0, accepted.stderr
    wrong = tmp_path / "docker-compose.yml"
    wrong.write_text(
        render.compose().replace(
            "    restart: unless-stopped\n", "    restart: sometimes\n    reboot: yes\n", 1
        )
    )
    refused = docker_compose_config(wrong)
    assert refused.returncode != 0 and "reboot" in refused.stderr, refused.stderr
