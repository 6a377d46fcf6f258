"""Pages. They talk to the REST API from the browser; the views only render templates."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie

from predictions.forecasting.base import MAX_HORIZON
from predictions.prices.sample import SAMPLE_SYMBOLS


@ensure_csrf_cookie
def index(request: HttpRequest) -> HttpResponse:
    context = {
        # Names only: describing them (SamplePriceProvider.symbols) loads every series.
        "offline_symbols": SAMPLE_SYMBOLS,
        "max_horizon": MAX_HORIZON,
        "providers": ", ".join(settings.PRICE_PROVIDERS),
        "models": settings.PREDICTION_MODELS,
    }
    return render(request, "webui/index.html", context)
