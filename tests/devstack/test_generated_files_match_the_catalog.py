"""docker-compose.yml, the Dockerfile and the playbooks' commands come from one process_catalog."""

from __future__ import annotations

from devstack import render
from launch import process_catalog


def test_every_generated_file_is_up_to_date():
    assert render.out_of_date() == [], "run `make generate`"


def test_compose_and_the_playbooks_start_the_same_worker_command():
    worker = process_catalog.worker("cpu", "cpu", 2)
    assert " ".join(worker.args) in render.compose().replace('", "', " ")
    assert '  - "start_worker"' in render.ansible_vars()
