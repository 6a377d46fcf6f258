"""No-op stand-ins for the model and sentiment stages, for the orchestration benchmark.

They return results of the right shape at once, so what remains of a request's latency is
what the orchestration adds: broker hops, the chord's join, the rows and the stage events.
"""

from __future__ import annotations

from typing import Any


def noop_model_run(name: str, history: Any, horizon: int, **kwargs: Any) -> dict[str, Any]:
    last = float(history.adj_close[-1])
    return {
        "model": name,
        "label": f"no-op {name}",
        "ok": True,
        "error": None,
        "horizon": horizon,
        "last_price": last,
        "forecast": [last] * horizon,
        "metrics": {"mae": 1.0, "naive_mae": 1.0},
    }


def sentiment(symbol: str) -> dict[str, Any]:
    return {
        "source": "no-op",
        "is_sample": True,
        "count": 0,
        "mean_compound": 0.0,
        "positive_share": 0.0,
        "negative_share": 0.0,
        "neutral_share": 0.0,
        "note": "benchmark stand-in",
        "fallback_reason": None,
    }


def install() -> None:
    """Swap the stage functions every strategy calls (in this process and its forks)."""
    from predictions import inputs
    from registry import answering

    answering.model_run = noop_model_run
    inputs.sentiment = sentiment
