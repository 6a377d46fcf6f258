"""docker-compose.yml, the Dockerfile and the playbooks' commands come from one catalog."""

from __future__ import annotations

from devstack import processes, render


def test_every_generated_file_is_up_to_date():
    assert render.out_of_date() == [], "run `make generate`"


def test_compose_and_the_playbooks_start_the_same_worker_command():
    worker = processes.worker("cpu", "cpu", 2)
    assert " ".join(worker.args) in render.compose().replace('", "', " ")
    assert '  - "start_worker"' in render.ansible_vars()
