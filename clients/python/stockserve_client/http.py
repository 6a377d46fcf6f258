"""The REST API from Python: POST a question, wait with `?wait=`, honour `Retry-After`.

A kept-alive connection may be closed by the server just as a request leaves on it
(gunicorn closes an idle one after its keep-alive, 2 s by default; a proxy after its own;
any server on a restart): the request fails with "Remote end closed connection without
response", and the client cannot tell whether the server read it. So a request that may
be sent twice (a GET) is sent again at once on a new connection, and one that may not (the
POST that creates a prediction) always goes out on a new connection and is never sent
again once it may have left. The API has no idempotency key: the same question sent again
by the same client while it runs makes a second row (a follower of its own request,
counted against its joins). A new connection per POST rather than reuse below an idle
bound, because a client cannot know the server's keep-alive nor when it restarts; it costs
one handshake per prediction, which then waits seconds for its answer.
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import quote

import requests
from urllib3.exceptions import ConnectTimeoutError

from stockserve_client.errors import (
    BadRequest,
    PredictionFailed,
    PredictionTimeout,
    Refused,
    ServiceUnavailable,
)
from stockserve_client.protocol import DONE, Answer, answer_from_prediction, check_question

PREDICTIONS = "/api/v1/predictions/"
# Methods whose effect is the same sent once or twice (RFC 9110, 9.2.2).
IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
TIMEOUT_S = 40  # above the longest `?wait=` the client asks for (30 s)


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
                response = self._request(method, path, **kwargs)
            except requests.ConnectionError as exc:
                if method not in IDEMPOTENT and not _never_sent(exc):
                    raise ServiceUnavailable(
                        f"The connection to {self.base_url} broke after the {method} was "
                        f"sent; it was not sent again, as the service may have taken it: {exc}"
                    ) from exc
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

    def _request(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        """One request on a connection the server cannot have closed unseen: a new one for
        a method that may not be sent twice; for one that may, a kept-alive one, and a new
        one again at once when the server closed that under the request."""
        url = self.base_url + path
        if method not in IDEMPOTENT:
            self.session.close()  # the kept-alive connections go; the settings stay
            return self.session.request(method, url, timeout=TIMEOUT_S, **kwargs)
        try:
            return self.session.request(method, url, timeout=TIMEOUT_S, **kwargs)
        except requests.ConnectionError as exc:
            if _never_sent(exc):
                raise
            self.session.close()
            return self.session.request(method, url, timeout=TIMEOUT_S, **kwargs)


def _never_sent(exc: requests.ConnectionError) -> bool:
    """True when no byte of the request can have reached the server: no connection was
    made (refused, a name not resolved, a connect timeout; urllib3's NewConnectionError is a
    ConnectTimeoutError)."""
    if isinstance(exc, requests.ConnectTimeout):
        return True
    reason = getattr(exc.args[0], "reason", None) if exc.args else None
    return isinstance(reason, ConnectTimeoutError)


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
