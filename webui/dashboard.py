"""Operator pages: the live dashboard and the browser load-test page (staff only).

Both views only render templates; the data comes over the websocket (dashboard) or from
requests the browser itself fires (load test).
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie

from forecasting.base import MAX_HORIZON
from marketdata.prices.sample import SamplePriceProvider
from workers.queue_routing import QUEUES

LOADTEST_MAX_REQUESTS = 5000
LOADTEST_MAX_SECONDS = 300
LOADTEST_MAX_CONCURRENCY = 64


@staff_member_required
def dashboard(request: HttpRequest) -> HttpResponse:
    context = {"queues": list(QUEUES), "tick": settings.DASHBOARD_TICK_SECONDS}
    return render(request, "webui/dashboard.html", context)


@staff_member_required
@ensure_csrf_cookie
def loadtest(request: HttpRequest) -> HttpResponse:
    symbols = [s["symbol"] for s in SamplePriceProvider().symbols()]
    context = {
        "limits": {
            "max_requests": LOADTEST_MAX_REQUESTS,
            "max_seconds": LOADTEST_MAX_SECONDS,
            "max_concurrency": LOADTEST_MAX_CONCURRENCY,
            "max_horizon": MAX_HORIZON,
            "max_wait": settings.PREDICTION_MAX_WAIT,
        },
        "default_mix": ", ".join(f"{s}:1" for s in symbols[:4]),
    }
    return render(request, "webui/loadtest.html", context)
