"""Submit through the API and wait for the final state, for the strategy tests."""

from __future__ import annotations

from typing import Any

URL = "/api/v1/predictions/"


def predict(api_client: Any, **body: Any) -> dict[str, Any]:
    """POST (never from the cache, models trained afresh) and wait for done or failed."""
    body = {"horizon": 5, "use_cache": False, "warm_start": False, **body}
    response = api_client.post(URL, body, format="json")
    assert response.status_code == 202, response.content
    prediction_id = response.json()["id"]
    for _ in range(4):  # a cold worker may need longer than one wait
        prediction = api_client.get(f"{URL}{prediction_id}/?wait=60").json()
        if prediction["status"] in ("done", "failed"):
            break
    assert prediction["status"] == "done", prediction["error"]
    return prediction


def stages_by_name(prediction: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {stage["stage"]: stage for stage in prediction["stages"]}
