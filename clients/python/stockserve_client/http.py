"""The REST API from Python: POST a question, wait with `?wait=`, honour `Retry-After`."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import quote

import requests

from stockserve_client.errors import (
    BadRequest,
    PredictionFailed,
    PredictionTimeout,
    Refused,
    ServiceUnavailable,
)
from stockserve_client.protocol import DONE, Answer, answer_from_prediction, check_question

PREDICTIONS = "/api/v1/predictions/"


class Client:
    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        max_retries: int = 3,
        max_retry_after: float = 30.0,
        sleep: Any = time.sleep,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.session = requests.Session()
        if token:
            self.session.headers["Authorization"] = f"Token {token}"
        self.max_retries = max_retries
        self.max_retry_after = max_retry_after
        self.sleep = sleep

    def predict(self, symbol: str, horizon: int = 5, timeout: float = 120.0) -> Answer:
        """The combined forecast; raises BadRequest, Refused, ServiceUnavailable,
        PredictionFailed or PredictionTimeout with the service's sentence."""
        check_question("http", symbol, horizon)
        deadline = time.monotonic() + timeout
        body = {"symbol": symbol, "horizon": horizon}
        prediction = self._send("POST", PREDICTIONS, json=body)
        while prediction.get("status") not in (DONE, "failed"):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise PredictionTimeout(
                    f"Prediction {prediction.get('id')} is still {prediction.get('status')} "
                    f"after {timeout:.0f} s; ask for it again later."
                )
            wait = max(1, min(int(remaining), 30))
            prediction = self._send("GET", f"{PREDICTIONS}{prediction['id']}/?wait={wait}")
        answer = answer_from_prediction(str(prediction.get("id", "")), prediction)
        if not answer.ok:
            raise PredictionFailed(answer.error)
        return answer

    def track_record(self, symbol: str, horizon: int = 5, window: int = 60) -> dict[str, Any]:
        """What the service said for `symbol` at `horizon` (its last `window` forecasts of
        record, each step scored when its bar came) and the rolling metrics per model and
        for the ensemble; the shape is the API's (`docs/market.md`)."""
        check_question("http", symbol, horizon)
        path = f"/api/v1/symbols/{quote(symbol.strip(), safe='')}/track-record/"
        return self._send("GET", f"{path}?horizon={horizon}&window={window}")

    def _send(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        for attempt in range(self.max_retries + 1):
            try:
                response = self.session.request(method, self.base_url + path, timeout=40, **kwargs)
            except requests.ConnectionError as exc:
                if attempt == self.max_retries:
                    raise ServiceUnavailable(
                        f"The service at {self.base_url} is unreachable: {exc}"
                    ) from exc
                self.sleep(min(2**attempt, self.max_retry_after))
                continue
            if response.status_code in (200, 201, 202):
                data: dict[str, Any] = response.json()
                return data
            message = _sentence(response)
            if response.status_code in (429, 503):
                retry_after = _retry_after(response)
                error = (Refused if response.status_code == 429 else ServiceUnavailable)(
                    message, retry_after
                )
                if attempt == self.max_retries or retry_after > self.max_retry_after:
                    raise error
                self.sleep(retry_after)
                continue
            if 400 <= response.status_code < 500:
                raise BadRequest(message)
            raise ServiceUnavailable(f"HTTP {response.status_code}: {message}")
        raise AssertionError("unreachable")  # pragma: no cover


def _sentence(response: requests.Response) -> str:
    try:
        return str(response.json().get("error") or response.text)
    except ValueError:
        return response.text[:300]


def _retry_after(response: requests.Response) -> float:
    try:
        return max(0.0, float(response.headers.get("Retry-After", "1")))
    except ValueError:
        return 1.0
