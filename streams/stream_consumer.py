"""The server side of the stream client: questions from Redis Streams, answers to others.

Each client has its own input and output stream (`stockserve_client.protocol.client_keys`:
the default one, and every name `manage.py stream_clients add` registered, whose Redis user
reaches only its own keys). Each consumer (`manage.py serve_stream`, started by `make run`)
reads every client's input stream in one consumer group, so each question goes to one
consumer. All of it lives in the queue's Redis (`QUEUE_REDIS_URL`, streams/stream_redis.py),
and each client's bounds are enforced at every step (streams/stream_bounds.py): an entry
over QUEUE_MAX_ENTRY_BYTES, or a question beyond QUEUE_CLIENT_MAX_PENDING in progress, is
answered `refused`. A question goes through the gate every entry point shares
(`predictions.gate.ask`, admission control as the client `stream:<name>`, so each stream client
has its own share): a cached answer is written at once; otherwise the consumer holds its
message until the prediction ends. The answer is written once: one Lua script sets the
per-request key only if absent, appends to the output stream (capped), publishes the
request id on the client's one wake-up channel (`ClientKeys.done_channel`, the one channel
its ACL allows), then acknowledges and deletes the input entry. So nothing is acknowledged
before its answer exists (at least once), and a duplicate request id, or a message
answered twice after a claim, is answered once.

A consumer that dies holding messages leaves them pending in the group; a live consumer
claims them (XAUTOCLAIM) once idle for QUEUE_CLAIM_IDLE seconds and submits them again,
which joins the prediction already running for that question. Live consumers keep
resetting the idle time of what they hold.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis
from django.conf import settings
from stockserve_client import protocol
from stockserve_client.protocol import Answer, ClientKeys

from marketdata.symbols import InvalidSymbol, normalize_symbol
from plumbing import log_context
from plumbing.redis_client import get_redis
from predictions import awaiting, gate
from predictions.gate import Client, Question
from predictions.models import PredictionRequest
from streams import stream_bounds
from streams.redis_users import MARKET_READER_PREFIX, cap_connections
from streams.stream_bounds import Usage, trim_read
from streams.stream_redis import get_queue_redis, queue_script

log = logging.getLogger(__name__)
CLIENT_PREFIX = "stream:"  # + the client's name: its admission share (predictions.gate.Client)
DEAD_LETTER_STREAM = "stockserve:queue:dead"  # entries no consumer could answer, kept
FAILURES_KEY = "stockserve:queue:failures"  # entry id -> failed attempts

# KEYS: answer key, output stream, input stream, the client's usage. ARGV: answer JSON,
# request id, ttl, group, input entry id, the client's wake-up channel (told the request
# id), output cap, the hour the answer expires in, its bytes. The output stream keeps at
# most its cap whatever groups read it; below that, `trim_read` trims what every group has
# acknowledged.
_ANSWER_ONCE = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'EX', ARGV[3]) then
  redis.call('XADD', KEYS[2], 'MAXLEN', ARGV[7], '*', 'request_id', ARGV[2], 'answer', ARGV[1])
  redis.call('PUBLISH', ARGV[6], ARGV[2])
  redis.call('HINCRBY', KEYS[4], ARGV[8], ARGV[9])
  redis.call('EXPIRE', KEYS[4], tonumber(ARGV[3]) + 7200)
end
redis.call('XACK', KEYS[3], ARGV[4], ARGV[5])
redis.call('XDEL', KEYS[3], ARGV[5])
return 1
"""
TRIM_EVERY_SECONDS = 1.0
HELD_WAIT_SECONDS = 0.2  # a step with nothing new waits this long for a held answer


@dataclass
class Held:
    keys: ClientKeys
    entry_id: str
    request_id: str
    prediction_id: str


class StreamConsumer:
    def __init__(self, name: str) -> None:
        self.name = name
        self.redis = get_queue_redis()
        self.awaited = awaiting.Awaited()  # the predictions the held questions wait for
        self.held: dict[tuple[str, str], Held] = {}  # by (input stream, entry id)
        self.clients: dict[str, ClientKeys] = {}  # by input stream
        self.usage: dict[str, Usage] = {}  # by client name, this step
        self.trimmed_at = 0.0
        self.capped_at = 0.0
        self._refresh_clients()

    def _refresh_clients(self) -> None:
        """The default client and every named one (`manage.py stream_clients add`), each
        input stream with the servers' group."""
        names = [protocol.DEFAULT_CLIENT] + sorted(
            _text(n) for n in self.redis.smembers(protocol.CLIENTS_KEY)
        )
        current = {}
        for client in names:
            try:
                keys = protocol.client_keys(client)
            except ValueError:
                log.warning(
                    "stream consumer %s: ignoring client %r (not a valid name)", self.name, client
                )
                continue
            if keys.input not in self.clients:
                if keys.name != protocol.DEFAULT_CLIENT:
                    stream_bounds.renew_rules(self.redis, keys)
                try:
                    self.redis.xgroup_create(
                        keys.input, protocol.SERVER_GROUP, id="0", mkstream=True
                    )
                except redis.ResponseError as exc:
                    if "BUSYGROUP" not in str(exc):  # e.g. the queue's Redis is full
                        log.warning("stream consumer %s: client %s skipped: %s",
                                    self.name, client, exc)  # fmt: skip
                        continue
            current[keys.input] = keys
        self.clients = current

    def step(self, block_ms: int = 500) -> None:
        """Enforce each client's bounds, claim what dead consumers left, read new
        questions (at most QUEUE_READ_BATCH per client), answer what finished."""
        self._refresh_clients()
        stream_bounds.switch_on_again(self.redis)
        self.usage = stream_bounds.enforce(self.redis, list(self.clients.values()))
        cut_off = stream_bounds.cutoffs(self.redis)
        serving = {s: k for s, k in self.clients.items() if k.name not in cut_off}
        try:
            entries, redelivered = self._claim_and_read(serving, block_ms)
        except redis.ResponseError as exc:
            if "NOGROUP" not in str(exc):
                raise
            log.warning("stream consumer %s: a client's stream lost its group (%s); "
                        "making it again", self.name, exc)  # fmt: skip
            self.clients = {}  # the next refresh creates every group again
            return
        for keys, entry_id, fields in entries:
            if fields:  # a claimed entry already deleted has no fields
                again = (keys.input, _text(entry_id)) in redelivered
                self._take_safely(keys, _text(entry_id), fields, again)
        self._answer_finished(HELD_WAIT_SECONDS if not entries else 0.0)
        self._keep_held()
        self._trim_outputs()
        self._cap_connections()

    def _claim_and_read(
        self, serving: dict[str, ClientKeys], block_ms: int
    ) -> tuple[list[tuple[ClientKeys, Any, Any]], set[tuple[str, str]]]:
        """What dead consumers left (idle QUEUE_CLAIM_IDLE s), then new entries: at most
        QUEUE_READ_BATCH from each client's stream."""
        claim_idle_ms = settings.QUEUE_CLAIM_IDLE * 1000
        entries: list[tuple[ClientKeys, Any, Any]] = []
        redelivered: set[tuple[str, str]] = set()
        for stream, keys in serving.items():
            _next, claimed, *_ = self.redis.xautoclaim(
                stream, protocol.SERVER_GROUP, self.name, claim_idle_ms, count=10
            )
            entries += [(keys, entry_id, fields) for entry_id, fields in claimed]
            redelivered |= {(stream, _text(entry_id)) for entry_id, _ in claimed}
        if serving:
            read: Any = self.redis.xreadgroup(
                protocol.SERVER_GROUP,
                self.name,
                dict.fromkeys(serving, ">"),
                count=settings.QUEUE_READ_BATCH,  # per stream: each client reads as much
                block=block_ms if not self.held and not entries else None,
            )
            for stream, new in read or []:
                keys = serving[_text(stream)]
                entries += [(keys, entry_id, fields) for entry_id, fields in new]
        return entries, redelivered

    def _take_safely(
        self, keys: ClientKeys, entry_id: str, raw: dict[Any, Any], redelivered: bool
    ) -> None:
        """One entry; its failure is logged and counted, never the consumer's end. An entry
        delivered QUEUE_MAX_DELIVERIES times without an answer goes to the dead-letter
        stream, and its client is told it failed."""
        fields = {_text(k): _text(v) for k, v in raw.items()}
        size = sum(len(k) + len(v) for k, v in raw.items())
        if size > settings.QUEUE_MAX_ENTRY_BYTES:
            self._refuse(keys, entry_id, fields, _too_big(size))
            return
        if redelivered and self._deliveries(keys, entry_id) > settings.QUEUE_MAX_DELIVERIES:
            told = "it was delivered too many times without an answer"
            self._dead_letter(keys, entry_id, fields, told, told)
            return
        try:
            self._take(keys, entry_id, fields, redelivered)  # the gate binds the request id
        except Exception as exc:  # a bug or a store error on this entry: the next goes on
            log.exception("stream consumer %s: entry %s failed", self.name, entry_id)
            failure = f"{keys.input}/{entry_id}"
            failures = int(self.redis.hincrby(FAILURES_KEY, failure, 1))
            if failures >= settings.QUEUE_MAX_DELIVERIES:
                told = f"it failed {failures} times"
                self._dead_letter(keys, entry_id, fields, told, f"{told}: {exc!r}"[:300])
        finally:
            log_context.reset()  # the next entry's lines are not this one's

    def _deliveries(self, keys: ClientKeys, entry_id: str) -> int:
        pending: Any = self.redis.xpending_range(
            keys.input, protocol.SERVER_GROUP, min=entry_id, max=entry_id, count=1
        )
        return int(pending[0]["times_delivered"]) if pending else 0

    def _dead_letter(
        self, keys: ClientKeys, entry_id: str, fields: dict[str, str], told: str, reason: str
    ) -> None:
        """Keep the entry for an operator (DEAD_LETTER_STREAM, with the `reason`, the error
        included) and answer it as failed, telling the client what happened (`told`) but not
        the service's internals."""
        log.error("stream consumer %s: entry %s dead-lettered: %s", self.name, entry_id, reason)
        kept: dict[Any, Any] = {**fields, "client": keys.name, "entry_id": entry_id,
                                "reason": reason}  # fmt: skip
        self.redis.xadd(
            DEAD_LETTER_STREAM,
            kept,
            maxlen=settings.QUEUE_OUTPUT_MAXLEN,
            approximate=True,
        )
        self.redis.hdel(FAILURES_KEY, f"{keys.input}/{entry_id}")
        request_id = fields.get("request_id") or entry_id
        sentence = (
            f"This question could not be answered: {told}, so it was set aside for the "
            "service's operators. Ask again with a new request id."
        )
        failed = Answer(request_id, protocol.FAILED, error=sentence)
        self._write(keys, entry_id, failed)

    def _refuse(self, keys: ClientKeys, entry_id: str, fields: dict[str, str], reason: str) -> None:
        """Answer `refused` for a bound of this client's own: the sentence names only its
        use, and says to enqueue again later with a new request id."""
        request_id = fields.get("request_id", "")
        if not 0 < len(request_id) <= protocol.MAX_REQUEST_ID:
            request_id = entry_id
        retry = settings.ADMISSION_RETRY_AFTER_IDLE
        refused = Answer(request_id, protocol.REFUSED, error=reason, retry_after=retry)
        self._write(keys, entry_id, refused)

    def _in_progress(self, keys: ClientKeys) -> int:
        return self.usage.get(keys.name, Usage()).pending

    def _take(
        self, keys: ClientKeys, entry_id: str, fields: dict[str, str], redelivered: bool = False
    ) -> None:
        request_id = fields.get("request_id", "")
        try:
            protocol.check_question(request_id, fields.get("symbol", ""), int(fields["horizon"]))
            symbol = normalize_symbol(fields["symbol"])
        except (KeyError, ValueError, InvalidSymbol) as exc:
            invalid = Answer(request_id or entry_id, protocol.INVALID, error=str(exc))
            self._write(keys, entry_id, invalid)
            return
        horizon = int(fields["horizon"])
        given = self.redis.get(keys.answer_key(request_id))
        if given is not None:  # a duplicate id: acknowledged, not answered again
            self._write(keys, entry_id, Answer.from_fields({"answer": given}))
            return
        bound = settings.QUEUE_CLIENT_MAX_PENDING
        if not redelivered and self._in_progress(keys) >= bound:  # a claimed one was counted
            self._refuse(keys, entry_id, fields, _too_many(self._in_progress(keys), bound))
            return
        outcome = gate.ask(Question(symbol, horizon), Client(f"{CLIENT_PREFIX}{keys.name}"))
        if isinstance(outcome, gate.Answered):
            self._write(keys, entry_id, _answer(request_id, outcome.prediction))
        elif isinstance(outcome, gate.Unservable):
            invalid = Answer(request_id, protocol.INVALID, symbol, horizon, error=outcome.reason)
            self._write(keys, entry_id, invalid)
        elif isinstance(outcome, gate.Refused):
            refused = Answer(
                request_id,
                protocol.REFUSED,
                symbol,
                horizon,
                error=outcome.reason,
                retry_after=outcome.retry_after,
            )
            self._write(keys, entry_id, refused)
        else:
            prediction_id = str(outcome.request.id)
            self.held[(keys.input, entry_id)] = Held(keys, entry_id, request_id, prediction_id)
            self.awaited.add(prediction_id)
            if not redelivered:  # the next question of this step sees it in progress
                self.usage.setdefault(keys.name, Usage()).pending += 1

    def _answer_finished(self, seconds: float = 0.0) -> None:
        """Answer the held questions whose predictions ended (`predictions.awaiting`: woken by
        their final events), waiting up to `seconds` for the first."""
        if not self.held:
            return
        ended = {str(r.id): awaiting.answer_of(r) for r in self.awaited.ended(seconds)}
        for place, held in list(self.held.items()):
            if held.prediction_id in ended:
                del self.held[place]
                self._write(held.keys, held.entry_id,
                            _answer(held.request_id, ended[held.prediction_id]))  # fmt: skip

    def _keep_held(self) -> None:
        """Reset the idle time of the messages this consumer holds, so no one claims them."""
        by_stream: dict[str, list[Any]] = {}
        for stream, entry_id in self.held:
            by_stream.setdefault(stream, []).append(entry_id)
        for stream, ids in by_stream.items():
            self.redis.xclaim(stream, protocol.SERVER_GROUP, self.name, 0, ids, justid=True)

    def _trim_outputs(self) -> None:
        now = time.monotonic()
        if now - self.trimmed_at < TRIM_EVERY_SECONDS:
            return
        self.trimmed_at = now
        for keys in self.clients.values():
            trim_read(self.redis, keys.output, settings.QUEUE_ANSWER_TTL)

    def _cap_connections(self) -> None:
        """Each second, the restricted users' connections beyond their bounds closed: the
        stream clients' here, the market readers' in the main Redis (Redis has no
        per-user connection limit of its own)."""
        now = time.monotonic()
        if now - self.capped_at < TRIM_EVERY_SECONDS:
            return
        self.capped_at = now
        cap_connections(self.redis, stream_bounds.USER_PREFIX,
                        settings.QUEUE_CLIENT_MAX_CONNECTIONS)  # fmt: skip
        cap_connections(get_redis(), MARKET_READER_PREFIX, settings.MARKET_READER_MAX_CONNECTIONS)

    def _write(self, keys: ClientKeys, entry_id: str, answer: Answer) -> None:
        fields = answer.to_fields()
        answer_key = keys.answer_key(answer.request_id)
        hour, size = stream_bounds.answer_accounting(answer_key, fields["answer"])
        queue_script(_ANSWER_ONCE)(
            [answer_key, keys.output, keys.input, stream_bounds.usage_key(keys.name)],
            [
                fields["answer"],
                answer.request_id,
                settings.QUEUE_ANSWER_TTL,
                protocol.SERVER_GROUP,
                entry_id,
                keys.done_channel,
                settings.QUEUE_CLIENT_OUTPUT_MAXLEN,
                hour,
                size,
            ],
        )


def _answer(request_id: str, prediction: PredictionRequest) -> Answer:
    shown = {
        "id": str(prediction.id),
        "status": prediction.status,
        "symbol": prediction.symbol,
        "horizon": prediction.horizon,
        "error": prediction.error,
        "result": prediction.result,
    }
    return protocol.answer_from_prediction(request_id, shown)


def _too_big(size: int) -> str:
    return (
        f"This question's entry is {size} bytes; a question may be at most "
        f"{settings.QUEUE_MAX_ENTRY_BYTES} bytes (a request id, a symbol and a horizon)."
    )


def _too_many(in_progress: int, bound: int) -> str:
    return (
        f"You already have {in_progress} questions in progress, the most one stream client "
        f"may have at once ({bound}); enqueue it again with a new request id once an "
        "answer arrives."
    )


def _text(value: object) -> str:
    """Bytes as text; bytes that are not UTF-8 become U+FFFD, so the question is refused
    as invalid instead of failing to decode."""
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def serve(name: str, stop: Callable[[], bool]) -> None:
    """Answer questions until `stop()` says so; a Redis outage is waited out."""
    consumer = StreamConsumer(name)
    while not stop():
        try:
            consumer.step()
        except redis.RedisError as exc:
            log.warning("stream consumer %s: Redis unreachable (%s); retrying", name, exc)
            time.sleep(1)
        except Exception:  # the database or the broker away, or a bug: log, wait, go on
            log.exception("stream consumer %s: a step failed; retrying in 1 s", name)
            time.sleep(1)
