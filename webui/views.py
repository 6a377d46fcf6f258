"""Pages. They talk to the REST API from the browser; the views only render templates."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_GET

from forecasting.base import MAX_HORIZON
from marketdata import market_clock
from marketdata.prices.sample import SAMPLE_SYMBOLS


@ensure_csrf_cookie
def index(request: HttpRequest) -> HttpResponse:
    context = {
        # Names only: describing them (SamplePriceProvider.symbols) loads every series.
        "offline_symbols": SAMPLE_SYMBOLS,
        "max_horizon": MAX_HORIZON,
        "providers": ", ".join(settings.PRICE_PROVIDERS),
        "models": settings.PREDICTION_MODELS,
        "clock": market_clock.state().as_dict(),
    }
    return render(request, "webui/index.html", context)


@require_GET
def track_record(request: HttpRequest) -> HttpResponse:
    """Past forecasts over the prices that came; the data comes from the track-record API,
    which shows public forecasts to anyone and private ones to their owner."""
    horizon = request.GET.get("horizon", "5")
    context = {
        "offline_symbols": SAMPLE_SYMBOLS,
        "max_horizon": MAX_HORIZON,
        "symbol": request.GET.get("symbol", "AAPL")[:32],
        "horizon": int(horizon) if horizon.isascii() and horizon.isdigit() else 5,
        "clock": market_clock.state().as_dict(),
    }
    return render(request, "webui/track_record.html", context)
