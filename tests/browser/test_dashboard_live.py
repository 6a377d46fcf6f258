"""An operator watches the dashboard while another tab submits a prediction.

Everything is real: the live server (HTTP), uvicorn (websockets), the relay, a Celery
worker process, Redis, the database and headless Chromium.
"""

from __future__ import annotations

import pytest

from provisioning.models import ScalingDecision
from tests.support.live import login_in_browser, make_user
from workers import scaling_feed

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def test_the_dashboard_shows_a_prediction_live_with_its_waterfall(
    browser, live_server, ws_port, celery_worker, settings
):
    settings.WS_PORT = ws_port  # pages find the websocket server by themselves
    settings.WEBSOCKET_URL = ""
    stages = {"prices", "sentiment", "combine", *(f"model:{m}" for m in settings.PREDICTION_MODELS)}
    make_user("ops", staff=True)
    decision = ScalingDecision.objects.create(
        queue="cpu",
        action="add",
        reason="p95 wait 2.50 s above the 1 s target for 5 s, 7 waiting",
        wait_seconds=2.5,
        depth=7,
        workers=1,
        worker="auto-cpu-1@host",
        backend="local",
    )
    scaling_feed.publish(decision.as_dict())  # as the autoscaler records one
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    dashboard = context.new_page()
    dashboard.on("pageerror", lambda exc: errors.append(str(exc)))
    login_in_browser(dashboard, live_server.url, "ops", "/dashboard/")
    dashboard.wait_for_function("window.dashboardStats.connected", timeout=20_000)
    dashboard.wait_for_function("window.dashboardStats.batches > 0", timeout=20_000)

    # Another tab submits a prediction from the predict page.
    predict = context.new_page()
    predict.on("pageerror", lambda exc: errors.append(str(exc)))
    predict.goto(live_server.url + "/")
    predict.fill("#symbol", "msft")
    predict.fill("#horizon", "3")
    predict.click("#submit")
    predict.wait_for_selector("#result:not([hidden])", timeout=120_000)
    # Its own stages came over the websocket and all lit up.
    assert predict.get_attribute("#progress", "data-live") == "ws"
    pills = predict.locator("#stage-pills li")
    assert {pills.nth(i).get_attribute("data-stage") for i in range(pills.count())} == stages
    assert predict.locator("#stage-pills li.ok").count() == len(stages)
    assert predict.locator("#band-chart .scatterlayer .trace").count() >= 5  # the band panel
    assert predict.locator("#chart .scatterlayer .trace").count() >= 3  # the closes beside it

    # The dashboard received the live row...
    row = dashboard.locator("#feed tbody tr.status-done", has_text="MSFT")
    row.wait_for(timeout=30_000)
    cells = [c.strip() for c in row.locator("td").all_text_contents()]
    assert cells[1:4] == ["MSFT", settings.DEFAULT_STRATEGY, "done"]
    assert cells[4].endswith(("ms", " s")) and cells[5] == "miss"
    assert row.locator(".mini span").count() == len(stages)
    # ...and the waterfall: every stage on the worker that ran it.
    # (it follows the newest run and redraws at most once a second)
    dashboard.wait_for_function(
        "n => document.getElementById('waterfall-title').textContent.includes('MSFT · done')"
        " && document.querySelectorAll('#waterfall .ytick text').length === n",
        arg=len(stages),
        timeout=10_000,
    )
    labels = dashboard.locator("#waterfall .ytick text").all_text_contents()
    assert {label.split(" @ ")[0] for label in labels} == stages
    assert {label.split(" @ ")[1] for label in labels} == {celery_worker}
    # Workers and queues are shown; the rolling charts have points.
    dashboard.wait_for_selector(f"#workers tbody tr >> text={celery_worker}", timeout=10_000)
    assert dashboard.text_content("#q-io").startswith("io: ")
    assert dashboard.locator("#chart-throughput .scatterlayer .trace").count() == 2
    # The autoscaler's decision is listed and marked on the queue-wait timeline.
    decided = dashboard.locator("#decisions tbody tr", has_text="auto-cpu-1@host")
    decided.wait_for(timeout=10_000)
    assert "above the 1 s target" in decided.text_content()
    assert dashboard.locator("#chart-scaling .scatterlayer .trace").count() == 5
    assert dashboard.evaluate("window.dashboardStats.events") >= 8
    assert not errors, errors
    context.close()
