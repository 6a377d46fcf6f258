"""The staff workers page's JSON side: who may use it, how it refuses bad input, its state.

The page itself, with a run followed live, is in tests/browser/test_workers_page_log.py.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User

from provisioning.models import ProvisioningRun, RunStatus

pytestmark = pytest.mark.django_db(transaction=True)
STATE, RUNS = "/workers/state/", "/workers/runs/"
PASSWORD = "correct-horse-battery-staple"


def make_user(username: str, *, staff: bool, may_run: bool = False) -> User:
    user = User.objects.create_user(username, password=PASSWORD, is_staff=staff)
    if may_run:
        user.user_permissions.add(Permission.objects.get(codename="run_playbooks"))
    return user


@pytest.fixture
def staff_client(client):
    client.force_login(make_user("ops", staff=True, may_run=True))
    return client


def test_starting_a_run_needs_the_permission_viewing_does_not(client):
    client.force_login(make_user("watcher", staff=True))
    assert client.get(STATE).status_code == 200
    page = client.get("/workers/").content.decode()
    assert 'id="run-forbidden"' in page and "<fieldset disabled>" in page
    body = {"action": "remove", "host": "cpu1.example.com"}
    refused = client.post(RUNS, body, content_type="application/json")
    assert refused.status_code == 403
    assert "Can add and remove worker machines" in refused.json()["error"]
    assert ProvisioningRun.objects.count() == 0  # nothing recorded, nothing started

    client.force_login(User.objects.create_superuser("root", password=PASSWORD))
    group = client.post(
        RUNS, {"action": "remove", "host": "workers"}, content_type="application/json"
    )
    assert group.status_code == 400  # allowed past the permission; a group is no host
    assert "'workers' is a group, not a host" in group.json()["error"]
    assert 'id="run-forbidden"' not in client.get("/workers/").content.decode()


def test_it_is_for_staff_only(client):
    assert client.get("/workers/").status_code == 302  # to the admin login
    anonymous = client.get(STATE)
    assert anonymous.status_code == 401 and "staff" in anonymous.json()["error"]
    client.force_login(make_user("viewer", staff=False))
    assert client.get(STATE).status_code == 403
    assert client.post(RUNS, {}, content_type="application/json").status_code == 403
    assert ProvisioningRun.objects.count() == 0


def test_it_refuses_bad_input_with_a_sentence_and_records_it(staff_client):
    not_json = staff_client.post(RUNS, "nope", content_type="application/json")
    assert not_json.status_code == 400 and "JSON" in not_json.json()["error"]
    bad_action = staff_client.post(
        RUNS, {"action": "reboot", "host": "h1"}, content_type="application/json"
    )
    assert bad_action.status_code == 400 and "add or remove" in bad_action.json()["error"]

    wrong_queue = staff_client.post(
        RUNS, {"action": "add", "host": "h1", "queues": "cpu,fast"}, content_type="application/json"
    )

    assert wrong_queue.status_code == 400
    assert wrong_queue.json()["error"] == (
        "Unknown queue(s) 'fast': choose from io, cpu, gpu, scoring, spare."
    )
    run = ProvisioningRun.objects.get()
    assert run.status == RunStatus.FAILED and run.host == "h1" and run.requested_by == "ops"
    bad_host = staff_client.post(
        RUNS, {"action": "remove", "host": "h1; rm -rf /"}, content_type="application/json"
    )
    assert bad_host.status_code == 400 and "not a host name" in bad_host.json()["error"]
    assert staff_client.get("/workers/runs/999999/log/").status_code == 404
    for bad in (
        {"queues": [1]},
        {"queues": {"io": 1}},
        {"concurrency": "2"},
        {"concurrency": True},
    ):
        odd = staff_client.post(
            RUNS, {"action": "add", "host": "h1", **bad}, content_type="application/json"
        )
        assert odd.status_code == 400 and (
            "queue names" in odd.json()["error"] or "whole number" in odd.json()["error"]
        )


def test_the_state_lists_inventory_hosts_and_live_workers(staff_client, celery_worker):
    state = staff_client.get(STATE).json()

    hosts = {row["host"]: row for row in state["hosts"]}
    assert {"cpu1.example.com", "cpu2.example.com", "gpu1.example.com"} <= set(hosts)
    assert hosts["gpu1.example.com"]["inventory"]["queues"] == ["cpu", "gpu"]
    assert hosts["cpu1.example.com"]["alive"] == []
    live = {w["hostname"]: w for w in state["other_workers"]}
    assert live[celery_worker]["queues"] == ["cpu", "io"]
    assert live[celery_worker]["gpu"] is False
