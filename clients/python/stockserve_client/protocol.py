"""The queue's wire format, written down once: the server imports this module too."""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from typing import Any

# The default client's keys: for processes holding the service's own Redis credentials.
INPUT_STREAM = "stockserve:queue:input"
OUTPUT_STREAM = "stockserve:queue:output"
SERVER_GROUP = "stockserve-servers"  # consumers of the input stream
ANSWER_PREFIX = "stockserve:queue:answer:"  # one key per request id: answered once
# The default client's wake-ups: one channel, each message the request id just answered.
DONE_CHANNEL = "stockserve:queue:done"
MAX_REQUEST_ID = 128
MAX_HORIZON = 30
DEFAULT_CLIENT = "default"
CLIENTS_KEY = "stockserve:queue:clients"  # the named clients the service answers
CLIENT_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
# Names a client cannot take: each is the next part of a key or channel that the default
# client or the service already uses under `stockserve:queue:` (a client named `answer`
# would own `stockserve:queue:answer:*`, the default client's answers; `done` would sit
# beside its wake-up channel; `usage` and `cutoffs` the service's own bookkeeping).
RESERVED_NAMES = frozenset(
    {
        DEFAULT_CLIENT,
        *(key.split(":")[2] for key in (INPUT_STREAM, OUTPUT_STREAM, ANSWER_PREFIX,
                                        DONE_CHANNEL, CLIENTS_KEY)),
        "dead", "failures", "usage", "cutoffs",
    }
)  # fmt: skip


@dataclass(frozen=True)
class ClientKeys:
    """Where one client's questions, answers and wake-ups live. A named client's keys all
    start with `stockserve:queue:<name>:`, so a Redis ACL user restricted to that prefix
    (`manage.py stream_clients add NAME`) reads and writes its own and nothing else's.

    Its wake-ups are one channel, `done_channel`, each message the request id of an answer
    just written, not a channel per request: a Redis ACL channel pattern bounds neither
    the length nor the number of names it admits (`&...done:*` let one client subscribe
    to 10 MB names, memory no bound of the service saw), while one exact channel lets a
    connection hold one short subscription. A waiter reads its answer on the message that
    names its request, so the wake-up is as prompt as a channel of its own; it is also
    told of its client's other answers, which it skips without a round trip."""

    name: str
    input: str
    output: str
    answer_prefix: str
    done_channel: str

    def answer_key(self, request_id: str) -> str:
        return self.answer_prefix + request_id


def client_keys(name: str = DEFAULT_CLIENT) -> ClientKeys:
    if name == DEFAULT_CLIENT:
        return ClientKeys(name, INPUT_STREAM, OUTPUT_STREAM, ANSWER_PREFIX, DONE_CHANNEL)
    if not isinstance(name, str) or not CLIENT_NAME.match(name):
        raise ValueError(
            "A client name is 1 to 32 lowercase letters, digits, '-' or '_', starting with a "
            "letter or digit."
        )
    if name in RESERVED_NAMES:
        raise ValueError(
            f"The client name {name!r} is reserved: its keys (stockserve:queue:{name}:*) would "
            "overlap the default client's or the service's own; choose another name."
        )
    base = f"stockserve:queue:{name}:"
    return ClientKeys(name, base + "in", base + "out", base + "answer:", base + "done")


DONE, FAILED, REFUSED, INVALID = "done", "failed", "refused", "invalid"


def answer_key(request_id: str) -> str:
    return ANSWER_PREFIX + request_id


def check_question(request_id: str, symbol: str, horizon: int) -> None:
    """What a client can check before writing anything (the server checks the rest)."""
    if not isinstance(request_id, str) or not 0 < len(request_id) <= MAX_REQUEST_ID:
        raise ValueError(f"The request id must be a string of 1 to {MAX_REQUEST_ID} characters.")
    if not isinstance(symbol, str) or not symbol.strip():
        raise ValueError("The symbol must be a ticker such as 'AAPL'.")
    if type(horizon) is not int or not 1 <= horizon <= MAX_HORIZON:
        raise ValueError(f"The horizon must be a whole number of days from 1 to {MAX_HORIZON}.")


@dataclass(frozen=True)
class Answer:
    """The service's answer to one queued question."""

    request_id: str
    status: str  # done, failed, refused or invalid
    symbol: str = ""
    horizon: int = 0
    forecast: list[float] = field(default_factory=list)
    dates: list[str] = field(default_factory=list)
    lower: list[float] | None = None
    upper: list[float] | None = None
    unsure: bool | None = None
    coverage: dict[str, Any] | None = None  # the band's measured coverage, n, horizon, scope
    unsure_meaning: str = ""
    prediction_id: str = ""
    error: str = ""
    retry_after: float | None = None
    # How to read it: the band at the horizon with its sigma first, then the path labelled
    # as the band's centre with what the evaluation found against no change (docs/api.md).
    reading: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return self.status == DONE

    def to_fields(self) -> dict[str, str]:
        """As a stream entry or key value: JSON in one field."""
        return {"request_id": self.request_id, "answer": json.dumps(self.__dict__)}

    @classmethod
    def from_fields(cls, fields: dict[Any, Any]) -> Answer:
        raw = fields.get(b"answer", fields.get("answer"))
        if raw is None:
            raise ValueError("Not an answer: the entry has no 'answer' field.")
        data = json.loads(raw.decode() if isinstance(raw, bytes) else str(raw))
        known = {f.name for f in dataclasses.fields(cls)}  # a newer server may add some
        return cls(**{k: v for k, v in data.items() if k in known})


def answer_from_prediction(request_id: str, prediction: dict[str, Any]) -> Answer:
    """A finished prediction as the REST API shows it (`result.combined`) -> an Answer."""
    result = prediction.get("result") or {}
    combined = result.get("combined") or {}
    interval = combined.get("interval") or {}
    if prediction.get("status") != DONE:
        return Answer(
            request_id,
            FAILED,
            symbol=str(prediction.get("symbol", "")),
            horizon=int(prediction.get("horizon") or 0),
            prediction_id=str(prediction.get("id", "")),
            error=str(prediction.get("error") or "the prediction failed"),
        )
    return Answer(
        request_id,
        DONE,
        symbol=str(prediction.get("symbol", "")),
        horizon=int(prediction.get("horizon") or 0),
        forecast=list(combined.get("forecast") or []),
        dates=list(result.get("forecast_dates") or []),
        lower=interval.get("lower"),
        upper=interval.get("upper"),
        unsure=combined.get("unsure"),
        coverage=interval.get("coverage"),
        unsure_meaning=str(combined.get("unsure_meaning") or ""),
        prediction_id=str(prediction.get("id", "")),
        reading=combined.get("reading"),
    )
