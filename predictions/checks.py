"""System checks: settings naming a strategy or a model that does not exist fail at start-up
(`manage.py migrate`, which `make run` runs first, and `manage.py start_worker` run them)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import Error, Warning, register

from forecasting import keras_backend
from forecasting.calibration import seen_until_all
from forecasting.catalog import MODEL_NAMES, MODEL_SPECS
from predictions.models import STRATEGIES


@register()
def strategy_and_models_check(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    errors = []
    if settings.DEFAULT_STRATEGY not in STRATEGIES:
        errors.append(
            Error(
                f"DEFAULT_STRATEGY must be one of {', '.join(STRATEGIES)}; "
                f"got {settings.DEFAULT_STRATEGY!r}.",
                id="predictions.E001",
            )
        )
    unknown = [name for name in settings.PREDICTION_MODELS if name not in MODEL_NAMES]
    if unknown:
        errors.append(
            Error(
                f"PREDICTION_MODELS names unknown model(s) {', '.join(unknown)}; "
                f"choose from {', '.join(MODEL_NAMES)}.",
                id="predictions.E002",
            )
        )
    return errors


@register()
def keras_backend_check(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    """A KERAS_BACKEND the deep models cannot run on stops the start while one is configured
    (asked without importing any backend)."""
    deep = [
        n
        for n in settings.PREDICTION_MODELS
        if n in MODEL_SPECS and MODEL_SPECS[n].benefits_from_gpu
    ]
    reason = keras_backend.problem()
    if not deep or reason is None:
        return []
    return [Error(f"{reason} Deep models configured: {', '.join(deep)}.", id="predictions.E004")]


@register()
def timing_check(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    """Soft limit < hard limit < visibility timeout < deadline, or recovery cannot work."""
    chain = [
        ("TASK_SOFT_TIME_LIMIT", settings.CELERY_TASK_SOFT_TIME_LIMIT),
        ("TASK_TIME_LIMIT", settings.CELERY_TASK_TIME_LIMIT),
        ("CELERY_VISIBILITY_TIMEOUT", settings.CELERY_VISIBILITY_TIMEOUT),
        ("PREDICTION_TIMEOUT", settings.PREDICTION_TIMEOUT),
    ]
    for (low_name, low), (high_name, high) in zip(chain, chain[1:], strict=False):
        if low >= high:
            return [
                Error(
                    f"{low_name} ({low} s) must be below {high_name} ({high} s): a task lost "
                    "with its worker is redelivered after the visibility timeout and must "
                    "still finish before its request's deadline.",
                    id="predictions.E003",
                )
            ]
    return []


@register()
def replay_out_of_sample_check(app_configs: Any = None, **kwargs: Any) -> list[Warning]:
    """A replay that starts inside the days the adopted evaluation saw of a watched symbol
    measures again what the evaluation measured, and its live figures are not a check."""
    if settings.MARKET_CLOCK != "replay":
        return []
    seen = seen_until_all()
    inside = {
        s: seen[s]
        for s in settings.PRECOMPUTE_SYMBOLS
        if s in seen and seen[s] >= settings.REPLAY_START
    }
    if not inside:
        return []
    last = max(inside.values())
    return [
        Warning(
            f"REPLAY_START ({settings.REPLAY_START}) is inside the days make evaluate saw of "
            f"{', '.join(sorted(inside))} (until {last}): the replay's live coverage repeats "
            "what the evaluation measured.",
            hint=f"Start the replay after {last} (REPLAY_START).",
            id="predictions.W001",
        )
    ]
