"""Provision real workers over SSH onto two test hosts, use them, drain and remove them.

One scenario in order (the workers live across the tests of this module):
add two workers (the first with the inventory's default queues) -> a real prediction runs
on them -> a second add changes nothing -> bad input changes nothing -> beat and the
sweeper run on the first web host and the sweeper fails a late request -> removing a
busy worker drains it, no task lost -> remove the last.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command
from django.utils import timezone

from predictions.models import PredictionRequest
from provisioning.models import RunStatus
from tests.support.waiting import eventually

URL = "/api/v1/predictions/"
PLAYBOOKS = Path(__file__).resolve().parents[2] / "playbooks"
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.integration,
    pytest.mark.timeout(900),
]


def submit(api_client, symbol: str, horizon: int = 3) -> str:
    response = api_client.post(
        URL, {"symbol": symbol, "horizon": horizon, "use_cache": False}, format="json"
    )
    assert response.status_code == 202, response.content
    return response.json()["id"]


def wait_done(api_client, request_id: str) -> dict:
    body = api_client.get(f"{URL}{request_id}/?wait=60").json()
    for _ in range(5):  # cold workers warm TensorFlow first
        if body["status"] in ("done", "failed"):
            break
        body = api_client.get(f"{URL}{request_id}/?wait=60").json()
    return body


def test_add_worker_provisions_two_hosts_over_ssh(cluster):
    (out, run, error), (out2, run2, error2) = cluster.workers_at_once(
        ("add", "host1", "--concurrency", "1"),  # queues from the inventory's defaults
        ("add", "host2", "--queues", "cpu", "--concurrency", "1"),
    )

    assert error is None, out
    assert run.status == RunStatus.SUCCEEDED and run.host == "host1"
    assert run.changed > 0 and run.failed == 0 and run.unreachable == 0
    assert run.args == {"concurrency": 1}  # no queues named: workers_cpu hosts take io,cpu,scoring
    assert "TASK [worker : Ask the worker for a ping and its heartbeat]" in out  # streamed
    assert "TASK [worker : Ask the worker for a ping and its heartbeat]" in run.log  # kept
    assert error2 is None, out2
    assert run2.status == RunStatus.SUCCEEDED and run2.host == "host2"
    assert "host1" not in run2.log and "host2" not in run.log  # one private dir per run

    alive = cluster.alive()
    assert sorted(alive[cluster.node("host1")]["queues"]) == ["cpu", "io", "scoring"]
    assert alive[cluster.node("host2")]["queues"] == ["cpu"]
    assert alive[cluster.node("host1")]["concurrency"] == 1


def test_the_provisioned_workers_run_a_real_prediction(cluster, staff_api_client):
    prediction = wait_done(staff_api_client, submit(staff_api_client, "AAPL", horizon=5))

    assert prediction["status"] == "done", prediction["error"]
    ours = {cluster.node("host1"), cluster.node("host2")}
    stages = {s["stage"]: s for s in prediction["stages"]}
    assert {"prices", "sentiment", "combine"} <= set(stages)
    for stage in stages.values():
        assert stage["worker"] in ours, stage
    assert stages["prices"]["worker"] == cluster.node("host1")  # the only io consumer
    for model in prediction["result"]["models"]:
        assert model["ok"], model["error"]
        assert model["worker"] in ours


def test_a_second_add_changes_nothing(cluster):
    pid_before = cluster.alive()[cluster.node("host1")]["pid"]

    out, run, error = cluster.workers(
        "add", "host1", "--queues", "io,cpu,scoring", "--concurrency", "1"
    )

    assert error is None, out
    assert run.status == RunStatus.SUCCEEDED
    assert run.changed == 0, out
    assert cluster.alive()[cluster.node("host1")]["pid"] == pid_before  # not restarted


def test_status_and_list_show_the_running_workers(cluster):
    out, run, error = cluster.workers("status", "host1")

    assert error is None, out
    assert run.status == RunStatus.SUCCEEDED and run.changed == 0
    assert cluster.node("host1") in run.log and '"queues": [' in run.log

    listing = io.StringIO()
    call_command("workers", "list", "-i", str(cluster.inventory), stdout=listing)
    lines = {line.split()[0]: line for line in listing.getvalue().splitlines()[1:]}
    assert cluster.node("host1") in lines["host1"] and "[cpu,io,scoring] x1" in lines["host1"]
    assert cluster.node("host2") in lines["host2"]
    assert "not alive" in lines["host3"]


def test_a_wrong_queue_is_refused_and_recorded(cluster):
    before = cluster.alive()

    out, run, error = cluster.workers("add", "host2b", "--queues", "cpu,gpux")

    assert error is not None
    assert "Unknown queue(s) 'gpux'" in out and "choose from io, cpu, gpu" in out
    assert run.host == "host2b" and run.status == RunStatus.FAILED
    assert "Unknown queue(s) 'gpux'" in run.error
    assert run.log == ""  # Ansible never started
    assert _pids(cluster.alive()) == _pids(before)


def test_an_unreachable_host_is_reported_and_recorded(cluster):
    before = cluster.alive()

    out, run, error = cluster.workers("add", "host3", "--queues", "cpu")

    assert error is not None
    assert run.status == RunStatus.FAILED and run.unreachable == 1 and run.changed == 0
    assert "host3 is unreachable" in run.error and "Connection refused" in run.error
    assert "host3 is unreachable" in out
    assert not (cluster.net.root / "host3").exists()
    assert _pids(cluster.alive()) == _pids(before)


def test_a_worker_that_cannot_start_is_rolled_back_and_reported(cluster):
    before = cluster.alive()
    closed = f"redis://{cluster.net.broker_address}:1/0"

    out, run, error = cluster.workers(
        "add",
        "host2b",
        "--queues",
        "cpu",
        "-e",
        f"stockserve_redis_url={closed}",
        "-e",
        "worker_ready_timeout=5",
    )

    assert error is not None
    assert run.status == RunStatus.FAILED and run.failed >= 1
    assert "Worker host2b@" in run.error and "did not come up within 5 s" in run.error
    assert "It was stopped and removed again" in run.error
    assert "did not come up" in out
    conf_d = cluster.net.hosts["host2"].prefix / "supervisor" / "conf.d"
    assert sorted(p.name for p in conf_d.iterdir()) == ["stockserve-worker-host2.conf"]
    assert _pids(cluster.alive()) == _pids(before)  # host1 and host2 untouched


def test_the_scheduler_runs_on_the_first_web_host_and_its_sweeper_fails_late_requests(
    cluster, tmp_path
):
    data = yaml.safe_load(cluster.inventory.read_text())
    host1 = data["all"]["children"]["workers"]["children"]["workers_cpu"]["hosts"]["host1"]
    data["all"]["children"]["web"] = {"hosts": {"host1": host1}}
    inventory = tmp_path / "with-web.yml"
    inventory.write_text(yaml.safe_dump(data))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    env["ANSIBLE_CONFIG"] = str(PLAYBOOKS / "ansible.cfg")
    played = subprocess.run(
        [
            "ansible-playbook",
            "-i",
            str(inventory),
            "scheduler.yml",
            "-e",
            f"@{cluster.secrets_file}",
        ],
        cwd=PLAYBOOKS,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert played.returncode == 0, played.stdout[-3000:]
    assert "PLAY [Scheduler]" in played.stdout and "host2" not in played.stdout

    late = PredictionRequest.queued(symbol="AAPL", horizon=7, strategy="chord")
    late.deadline = timezone.now() - timedelta(seconds=5)
    late.save()

    def late_failed() -> bool:
        late.refresh_from_db()
        return late.status == "failed"

    eventually(late_failed, 90, "the sweeper failing the late request", 1.0)
    assert late.status == "failed" and "No worker picked this request up" in late.error
    prefix = cluster.net.hosts["host1"].prefix
    assert list((prefix / "var").glob("celerybeat-schedule*"))  # beat started there

    # Stop them again as a removal does, so host1's supervisord ends with its worker.
    for conf in (prefix / "supervisor" / "conf.d").glob("stockserve-scheduler-*.conf"):
        conf.unlink()
    supervisorctl = [str(prefix / "venv" / "bin" / "python"), "-m", "supervisor.supervisorctl"]
    conf = str(prefix / "supervisor" / "supervisord.conf")
    subprocess.run([*supervisorctl, "-c", conf, "update"], check=True, timeout=120)


def test_removing_a_busy_worker_drains_it_and_loses_no_task(cluster, staff_api_client):
    from config.celery_app import app

    node = cluster.node("host2")
    ids = [submit(staff_api_client, symbol) for symbol in ("MSFT", "IBM", "GOOG")]
    _wait_until_busy(app, node)

    out, run, error = cluster.workers("remove", "host2")

    assert error is None, out
    assert run.status == RunStatus.SUCCEEDED
    assert '"drained": true' in run.log
    assert node not in cluster.alive()
    predictions = [wait_done(staff_api_client, request_id) for request_id in ids]
    for prediction in predictions:
        assert prediction["status"] == "done", prediction["error"]
        assert all(model["ok"] for model in prediction["result"]["models"])
    on_host2 = [s for p in predictions for s in p["stages"] if s["worker"] == node]
    assert on_host2, "host2 ran none of the tasks it held when the removal began"
    assert all(s["finished_at"] for s in on_host2)

    out, run, error = cluster.workers("remove", "host1")
    assert error is None, out
    assert cluster.node("host1") not in cluster.alive()
    assert not (cluster.net.hosts["host1"].prefix / "run" / "supervisord.pid").exists()


def _pids(alive: dict[str, dict]) -> dict[str, int]:
    return {node: worker["pid"] for node, worker in alive.items()}


def _wait_until_busy(app, node: str) -> None:
    """Until the worker holds a task (an event, not a timing); bounded."""
    eventually(
        lambda: (app.control.inspect(destination=[node], timeout=1.0).active() or {}).get(node),
        120,
        f"{node} picking a task up",
        0.2,
    )
