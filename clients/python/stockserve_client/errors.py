"""What can go wrong, each carrying the service's own sentence."""

from __future__ import annotations


class StockserveError(Exception):
    """Base of every error these clients raise."""


class BadRequest(StockserveError):
    """The service cannot serve the question as asked (bad symbol or horizon): fix it."""


class Refused(StockserveError):
    """The service (or this client's share of it) is at capacity: try again later."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ServiceUnavailable(Refused):
    """The service is busy, starting, or cannot reach its data store (HTTP 503)."""


class PredictionFailed(StockserveError):
    """The prediction ran and failed; the message says why."""


class PredictionTimeout(StockserveError):
    """No final answer within the time given; the prediction may still finish."""
