"""Clients for the stock prediction service, importable without Django or TensorFlow.

`InputQueue` / `OutputQueue`: enqueue questions on a Redis Stream and read the answers,
for programs that would rather not hold an HTTP connection (the service's `serve_stream`
consumer answers them). `Client`: the REST API, waiting with `?wait=` and honouring
`Retry-After`.
"""

from stockserve_client.errors import (
    BadRequest,
    PredictionFailed,
    PredictionTimeout,
    Refused,
    ServiceUnavailable,
    StockserveError,
)
from stockserve_client.http import Client
from stockserve_client.protocol import Answer
from stockserve_client.queues import InputQueue, OutputQueue

__all__ = [
    "Answer",
    "BadRequest",
    "Client",
    "InputQueue",
    "OutputQueue",
    "PredictionFailed",
    "PredictionTimeout",
    "Refused",
    "ServiceUnavailable",
    "StockserveError",
]
