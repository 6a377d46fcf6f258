"""Every decision the autoscaler records reaches the `/workers/` page (staff only) and the
dashboard relay's feed; queue waits reach `/metrics`."""

from __future__ import annotations

import pytest

from provisioning.models import ScalingDecision
from webui.events import system
from workers import scaling_feed

pytestmark = pytest.mark.django_db


def record(action: str, reason: str) -> ScalingDecision:
    decision = ScalingDecision.objects.create(
        queue="io",
        action=action,
        reason=reason,
        wait_seconds=1.5,
        depth=4,
        workers=1,
        worker="auto-io-1@host",
        backend="local",
    )
    scaling_feed.publish(decision.as_dict())
    return decision


def test_staff_see_the_decisions_with_their_reasons_and_others_are_refused(
    client, django_user_model
):
    record("add", "p95 wait 1.50 s above the 1 s target for 5 s, 4 waiting")
    record("drain", "nothing waiting and p95 wait 0.00 s for 60 s, 2 pool process(es) idle")
    client.force_login(django_user_model.objects.create_user("viewer"))
    assert client.get("/workers/state/").status_code == 403
    client.force_login(django_user_model.objects.create_user("ops", is_staff=True))
    state = client.get("/workers/state/").json()
    decisions = state["autoscale"]["decisions"]
    assert [d["action"] for d in decisions] == ["drain", "add"]  # newest first
    assert decisions[1]["reason"].startswith("p95 wait 1.50 s") and decisions[1]["depth"] == 4
    page = client.get("/workers/")
    assert page.status_code == 200 and b'id="decisions"' in page.content


def test_the_relay_feed_and_metrics_carry_the_autoscalers_numbers(client, settings):
    record("add", "below the minimum of 1")
    assert system.scaling_decisions()[0]["reason"] == "below the minimum of 1"
    _, waits = system.queue_depths_and_waits()
    assert set(waits) == {"io", "cpu", "gpu", "scoring", "spare"} and all(
        w >= 0 for w in waits.values()
    )
    settings.METRICS_TOKEN = "scrape-token-for-the-test"
    body = client.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-token-for-the-test")
    body = body.content.decode()
    assert 'stockserve_queue_wait_seconds{queue="io"}' in body
