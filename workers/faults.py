"""A fault injected on purpose, to measure how fast model health notices one.

`FAULT_INJECTION=model:bias:date` (e.g. `ridge:0.03:2012-09-04`) multiplies that model's
forecasts by (1 + bias) from that bar on. Settings refuse it outside a replay and in
production (`config/settings.py`): it exists for the tests and `make replay` only, never
in a served configuration. The run says it was tampered with (`fault_injected`).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from predictions.prices import PriceHistory


def injected(name: str, history: PriceHistory, run: dict[str, Any]) -> dict[str, Any]:
    spec = settings.FAULT_INJECTION
    if not spec or not run.get("ok"):
        return run
    model, bias, since = spec
    if name != model or history.last_bar_date < since:
        return run
    forecast = [float(v) * (1.0 + bias) for v in run.get("forecast") or []]
    return {**run, "forecast": forecast, "fault_injected": f"{bias:+.1%} from {since}"}
