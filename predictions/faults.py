"""Faults injected on purpose: to measure how fast model health notices one, and that a
straggler never holds the answer.

`FAULT_INJECTION=model:bias:date` (e.g. `ridge:0.03:2012-09-04`) multiplies that model's
forecasts by (1 + bias) from that bar on. Settings refuse it outside a replay and in
production (`config/settings.py`): it exists for the tests and `make -C lab replay` only, never
in a served configuration. The run says it was tampered with (`fault_injected`).
`FAULT_HANG=model:seconds` (e.g. `ridge:5`) holds that model back before it runs, under
the same guard: its run is late, not lost (predictions/stragglers.py).
"""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings

from marketdata.prices import PriceHistory


def injected(name: str, history: PriceHistory, run: dict[str, Any]) -> dict[str, Any]:
    spec = settings.FAULT_INJECTION
    if not spec or not run.get("ok"):
        return run
    model, bias, since = spec
    if name != model or history.last_bar_date < since:
        return run
    forecast = [float(v) * (1.0 + bias) for v in run.get("forecast") or []]
    return {**run, "forecast": forecast, "fault_injected": f"{bias:+.1%} from {since}"}


def hang(name: str) -> None:
    """Hold `name` back for FAULT_HANG's seconds (a straggler on purpose); else nothing."""
    spec = settings.FAULT_HANG
    if spec and spec[0] == name:
        time.sleep(spec[1])
