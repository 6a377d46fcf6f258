"""What TF Serving's status and metadata calls report: versions, their state, the signature.

A member's versions are its registry generations (trained, or fine-tuned on new bars);
the newest serves and older ones the registry keeps are `END`. Whether the newest is
`AVAILABLE` depends on the workers: none alive is `UNKNOWN`, alive but still warming up
(TensorFlow loading) is `LOADING`.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from api.tfserving.outputs import ENSEMBLE, ENSEMBLE_VERSION
from forecasting.base import DEFAULT_HORIZON, MAX_HORIZON
from registry.models import ModelGeneration
from workers import presence

OK = {"error_code": "OK", "error_message": ""}


def serving_state() -> tuple[str, dict[str, str]]:
    """AVAILABLE, LOADING or UNKNOWN, from the live workers' heartbeats."""
    workers = [w for w in presence.alive_workers() if "cpu" in w.get("queues", [])]
    if not workers:
        message = "No worker consumes the cpu queue: start one (make run, manage.py start_worker)."
        return "UNKNOWN", {"error_code": "UNAVAILABLE", "error_message": message}
    if not any(presence.is_ready(w) for w in workers):
        return "LOADING", OK
    return "AVAILABLE", OK


def model_versions(model: str) -> list[dict[str, Any]]:
    state, status = serving_state()
    if model == ENSEMBLE:
        return [{"version": str(ENSEMBLE_VERSION), "state": state, "status": status}]
    numbers = sorted(
        set(ModelGeneration.objects.filter(model=model).values_list("generation", flat=True)),
        reverse=True,
    )
    return [
        {"version": str(n), "state": state if i == 0 else "END", "status": status if i == 0 else OK}
        for i, n in enumerate(numbers)
    ]


def _tensor(dtype: str, *dims: int) -> dict[str, Any]:
    return {"dtype": dtype, "tensor_shape": {"dim": [{"size": str(d)} for d in dims]}}


def signature(model: str) -> dict[str, Any]:
    """TF Serving's signature_def for `serving_default`, and what it does not say."""
    outputs = {
        "lower": _tensor("DT_DOUBLE", -1, -1),
        "upper": _tensor("DT_DOUBLE", -1, -1),
        "level": _tensor("DT_DOUBLE", -1),
        "sigma": _tensor("DT_DOUBLE", -1),
        "forecast": _tensor("DT_DOUBLE", -1, -1),
        "dates": _tensor("DT_STRING", -1, -1),
        "reading": _tensor("DT_STRING", -1),
        "beats_no_change": _tensor("DT_BOOL", -1),
        "unsure": _tensor("DT_BOOL", -1),
        "version": _tensor("DT_INT64", -1),
        "last_bar_date": _tensor("DT_STRING", -1),
        "source": _tensor("DT_STRING", -1),
        "request_id": _tensor("DT_STRING", -1),
        "cache_hit": _tensor("DT_BOOL", -1),
    }
    return {
        "signature_def": {
            "signature_def": {
                "serving_default": {
                    "inputs": {
                        "symbol": _tensor("DT_STRING", -1),
                        "horizon": _tensor("DT_INT32", -1),
                    },
                    "outputs": outputs,
                    "method_name": "tensorflow/serving/predict",
                }
            }
        },
        "horizons": {"min": 1, "max": MAX_HORIZON, "default": DEFAULT_HORIZON},
        "members": list(settings.PREDICTION_MODELS) if model == ENSEMBLE else [model],
        "interval": (
            "the ensemble's 80 % band (the one make evaluate chose) with its measured coverage "
            "and n on this symbol's held-out history; null for a single member"
        ),
        "reading": (
            "the band first (its bounds at the horizon, sigma of the horizon's log return, its "
            "coverage), then the forecast path labelled as the band's centre, with what the "
            "out-of-sample evaluation found about point forecasts against no change"
        ),
    }
