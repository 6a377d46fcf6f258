"""Who and what a provisioning run accepts, what Ansible sees of this process, and what a
run leaves behind; real ansible-inventory and ansible-runner, no SSH host needed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import ansible_runner
import pytest

from provisioning import hosts, inventory, playbook_runs
from provisioning.models import ProvisioningRun, RunStatus

pytestmark = pytest.mark.django_db(transaction=True)
EXAMPLE = [str(playbook_runs.PLAYBOOKS_DIR / "inventory" / "example.yml")]


@pytest.mark.parametrize(
    ("host", "sentence"),
    [
        ("workers", "'workers' is a group, not a host"),
        ("all", "'all' is a group, not a host"),
        ("ungrouped", "'ungrouped' is a group, not a host"),
        ("workers_gpu", "'workers_gpu' is a group, not a host"),
        ("web1.example.com", "is in the inventory but not in its workers groups"),
        ("cpu9.example.com", "is not in the inventory"),
        ("*", "is not a host name"),
        ("web:workers", "is not a host name"),
        ("!cpu1.example.com", "is not a host name"),
        ("cpu1.example.com,cpu2.example.com", "is not a host name"),
        ("~cpu.*", "is not a host name"),
        ("workers[0]", "is not a host name"),
        ("web&workers", "is not a host name"),
    ],
)
def test_only_one_worker_host_of_the_inventory_is_accepted(host, sentence):
    with pytest.raises(hosts.BadRequest, match=sentence.replace("*", r"\*")):
        playbook_runs.start_run("remove", host, inventories=EXAMPLE, requested_by="test")
    refused = ProvisioningRun.objects.get()
    assert refused.status == RunStatus.FAILED and sentence.split("'")[-1] in refused.error
    assert refused.log == ""  # Ansible never started


def test_a_worker_host_of_the_inventory_is_accepted():
    run = playbook_runs.start_run("add", "gpu1.example.com", inventories=EXAMPLE, requested_by="t")
    assert run.status == RunStatus.QUEUED and run.host == "gpu1.example.com"
    workers, error = inventory.inventory_workers(EXAMPLE)
    assert error == ""
    assert workers["cpu1.example.com"]["queues"] == ["io", "cpu", "scoring"]  # io and scoring too
    assert workers["gpu1.example.com"]["queues"] == ["cpu", "gpu"]


def test_ansible_sees_none_of_this_process_settings(tmp_path, monkeypatch):
    monkeypatch.setenv("SECRET_KEY", "web-secret-key-value")
    monkeypatch.setenv("DATABASE_URL", "postgres://user:db-password@db/stockserve")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    own = playbook_runs._envvars()
    prepared = ansible_runner.interface.init_runner(
        private_data_dir=str(tmp_path),
        project_dir=str(playbook_runs.PLAYBOOKS_DIR),
        playbook="status.yml",
        inventory=EXAMPLE,
        envvars=own,
        quiet=True,
    )
    assert prepared.config.env["SECRET_KEY"] == "web-secret-key-value"  # runner copies it all

    env = playbook_runs.ansible_env(prepared.config.env, own)

    assert "SECRET_KEY" not in env and "DATABASE_URL" not in env
    assert env["PATH"] == own["PATH"] and env["HOME"] == os.environ["HOME"]
    assert env["LC_ALL"] == "C.UTF-8"
    assert env["ANSIBLE_HOST_KEY_CHECKING"] == "True"  # runner's default would be False
    assert env["ANSIBLE_STDOUT_CALLBACK"] == prepared.config.env["ANSIBLE_STDOUT_CALLBACK"]


def test_a_run_leaves_no_private_directory_behind(monkeypatch):
    monkeypatch.setenv("SECRET_KEY", "web-secret-key-value")
    run = playbook_runs.start_run(
        "status", "cpu1.example.com", inventories=EXAMPLE, requested_by="t"
    )
    options = playbook_runs.RunOptions(inventories=EXAMPLE, extravars={"vault_x": "a-secret"})
    finished = playbook_runs.execute(run, options)

    assert finished.status == RunStatus.FAILED and finished.unreachable == 1  # no such host
    assert "cpu1.example.com is unreachable" in finished.error
    # Its private directory (named after the run) is gone: env/extravars and artifacts. The
    # other test process may be running a run of its own in the same folder meanwhile.
    assert not list(playbook_runs.runs_dir().glob(f"{run.pk}-*"))
    assert "a-secret" not in finished.log and "web-secret-key-value" not in finished.log


def test_each_worker_group_gets_its_settings_from_the_playbooks_group_vars():
    """Ansible reads `group_vars/NAME/` and skips a `NAME.yml` beside it without a word:
    the GPU group's settings must resolve as written."""

    def resolved(host: str) -> dict:
        out = subprocess.run(
            ["ansible-inventory", "-i", EXAMPLE[0], "--playbook-dir", ".", "--host", host],
            cwd=playbook_runs.PLAYBOOKS_DIR,
            env={**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return json.loads(out)

    gpu, cpu = resolved("gpu1.example.com"), resolved("cpu1.example.com")
    assert gpu["worker_queues"] == ["cpu", "gpu"] and gpu["worker_concurrency"] == 1
    assert gpu["common_tensorflow_gpu"] is True
    assert cpu["worker_queues"] == ["io", "cpu", "scoring"]
