"""Registry rows for the generation tests: two generations of IBM's ridge, the first serving."""

from __future__ import annotations

import datetime as dt

from registry import generations
from registry.models import ModelGeneration


def two_generations(symbol: str = "IBM", model: str = "ridge") -> list[ModelGeneration]:
    day = dt.date(2013, 3, 1)
    made = [
        ModelGeneration.objects.create(
            symbol=symbol, model=model, generation=n, price_key="k", train_bars=100,
            train_last_date=day, data_last_date=day, fit_seconds=0.1, state=b"s",
        )
        for n in (1, 2)
    ]  # fmt: skip
    generations.start_serving(made[0], "the first generation of this model")
    return made
