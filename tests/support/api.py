"""Predictions as the tests need them: through the REST API, or made in the database."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from predictions.models import PredictionRequest, Status

URL = "/api/v1/predictions/"
FINAL = ("done", "failed")


def wait_until_final(api_client: Any, prediction_id: str, tries: int = 4) -> dict[str, Any]:
    """GET ?wait=60 until the prediction is done or failed (a cold worker may need more
    than one wait)."""
    for _ in range(tries):
        prediction: dict[str, Any] = api_client.get(f"{URL}{prediction_id}/?wait=60").json()
        if prediction["status"] in FINAL:
            return prediction
    raise AssertionError(f"{prediction_id} is still {prediction['status']}")


def submit_and_wait(api_client: Any, **body: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """POST a request that must be queued (202), then wait for it: (accepted, final)."""
    response = api_client.post(URL, body, format="json")
    assert response.status_code == 202, response.content
    accepted: dict[str, Any] = response.json()
    assert accepted["status"] == "queued"
    assert response["Location"] == accepted["links"]["self"]
    return accepted, wait_until_final(api_client, accepted["id"])


def predict_cold(api_client: Any, **body: Any) -> dict[str, Any]:
    """Never from the cache, every model trained afresh; asserts it ends done."""
    _, prediction = submit_and_wait(
        api_client, **{"horizon": 5, "use_cache": False, "warm_start": False, **body}
    )
    assert prediction["status"] == "done", prediction["error"]
    return prediction


def stages_by_name(prediction: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {stage["stage"]: stage for stage in prediction["stages"]}


def finished_prediction(symbol: str, horizon: int, **result: Any) -> PredictionRequest:
    """A prediction the pipeline finished just now, so the cache may answer with it."""
    now = timezone.now()
    done = PredictionRequest.objects.create(
        symbol=symbol, horizon=horizon, status=Status.DONE, started_at=now, finished_at=now
    )
    done.result = {
        "request_id": str(done.id),
        "symbol": symbol,
        "horizon": horizon,
        "strategy": "chord",
        "data": {"source": "sample", "last_bar_date": "2013-03-01", "price_key": "k"},
        "history": {"dates": ["2013-03-01"], "close": [430.47]},
        "combined": {"forecast": [431.0] * horizon},
        **result,
    }
    done.save()
    return done
