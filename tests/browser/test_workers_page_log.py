"""The staff workers page in Chromium: start a run from the form and watch its log live.

The run is real: ansible-runner runs remove_worker.yml (in a thread of the live server)
against an inventory host that cannot be resolved (cpu1.example.com), so it fails as an
unreachable host does, and the page shows the log as it is written, then the error.
"""

from __future__ import annotations

import pytest

from provisioning.models import ProvisioningRun, RunStatus
from tests.provisioning.test_workers_page import PASSWORD, make_user

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def login_in_browser(tab, base_url: str, username: str, next_path: str) -> None:
    """Through the admin login form, as an operator would."""
    tab.goto(f"{base_url}/admin/login/?next={next_path}")
    tab.fill("#id_username", username)
    tab.fill("#id_password", PASSWORD)
    tab.click("input[type=submit]")
    tab.wait_for_url(f"**{next_path}")


def test_a_run_started_on_the_page_streams_its_log(page, live_server):
    make_user("ops", staff=True, may_run=True)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    login_in_browser(page, live_server.url, "ops", "/workers/")
    assert page.locator("#hosts tbody tr[data-host='gpu1.example.com']").count() == 1

    page.select_option("#action", "remove")
    page.fill("#host", "cpu1.example.com")
    page.click("#run-submit")
    page.wait_for_selector("#run-status:text('failed')", timeout=120_000)

    log = page.text_content("#run-log")
    assert "PLAY [Remove a worker]" in log and "UNREACHABLE" in log
    assert "cpu1.example.com is unreachable" in page.text_content("#run-error")
    assert "failed" in page.text_content("#run-message")
    run = ProvisioningRun.objects.get(host="cpu1.example.com")
    assert run.status == RunStatus.FAILED and run.unreachable == 1
    assert run.log.strip() and run.log.strip() in log.strip()
    assert errors == []
