"""A cached answer from the process's memory (or one Redis round trip), before Django's
request handling runs.

Why: an API client asking a question someone already asked should cost about what a plain
Django view costs. A DRF view with DRF's throttles costs several times the web CPU per
answer, and a middleware inside Django's stack still more than this WSGI wrapper (the
service's figures, and the command that measures them, are in docs/figures.md). So a
plain question (a JSON body with a symbol and a horizon, no session cookie, no query
string, anonymous or with a token Redis knows) is answered here. The first time, one Lua
script counts the client in its rate-limit window, fetches the stored answer and counts
the hit; the process then keeps the answer (and a token's user) in memory, which Redis
keeps current (`answer_memory`), and counts the next askers from leased blocks of their
windows (`predictions.rate_leases`): no round trip at all.
Django's own SecurityMiddleware and XFrameOptionsMiddleware still vet the request and
add their headers, so this path answers with the same headers as any other.

Everything else goes on to Django, which validates and explains errors, enforces CSRF for
browser sessions, joins identical requests in flight and queues new ones. A miss gives
back the rate-limit count it took, since the full path counts again. It is the pattern
WhiteNoise uses for static files: a WSGI wrapper around Django's application.

What Django's middleware decides depends only on the host and the scheme a request names,
so it is worked out once per (host, scheme) and kept (`Verdicts`); the script runs on a
connection of the thread's own (`run_answer_script`). Both were most of this path's CPU
beyond the bare view's (docs/figures.md, `make -C lab bench-api`).
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import threading
import time
from collections.abc import Iterable
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.core.handlers.wsgi import WSGIRequest
from django.core.signals import setting_changed
from django.http import HttpResponse, JsonResponse
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.security import SecurityMiddleware
from django.urls import reverse
from redis.exceptions import RedisError

from api import tokens
from api.answer_memory import TrackedMemory
from api.errors import STORE_ERRORS, store_down_response
from forecasting.base import DEFAULT_HORIZON, MAX_HORIZON
from marketdata.symbols import InvalidSymbol, normalize_symbol
from plumbing import event_metrics
from plumbing.redis_client import get_redis, script
from predictions import answer_cache
from predictions.models import STRATEGIES
from predictions.rate_leases import Leases
from predictions.rate_limits import Rate, client_ident, retry_after, window_key

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIApplication

log = logging.getLogger(__name__)
FIELDS = frozenset({"symbol", "horizon", "strategy", "use_cache", "warm_start"})
REFUSED, MISS, HIT, UNKNOWN_TOKEN = 0, 1, 2, 3

# KEYS: the rate-limit counter (anonymous) or the token's key (token), answer, metrics hash.
# ARGV: window seconds, limit, counter prefix and suffix (token), hit fields...
# A hit returns the answer and its milliseconds left, and a token's user id and its
# milliseconds left, for this process's memory (`answer_memory`).
# A token client's counter is named after its user id, which only Redis knows here: the
# lookup is in the script, so a token costs no second round trip (it cost 160 us of CPU).
_ANSWER = """
local counter, user, user_ttl = KEYS[1], '', 0
if ARGV[3] ~= '' then
  user = redis.call('GET', KEYS[1])
  if not user then return {3} end
  counter, user_ttl = ARGV[3] .. user .. ARGV[4], redis.call('PTTL', KEYS[1])
end
local used = redis.call('INCR', counter)
if used == 1 then redis.call('EXPIRE', counter, ARGV[1]) end
if used > tonumber(ARGV[2]) then return {0, redis.call('TTL', counter)} end
local body = redis.call('GET', KEYS[2])
if not body then
  redis.call('DECR', counter)
  return {1}
end
for i = 5, #ARGV do redis.call('HINCRBY', KEYS[3], ARGV[i], 1) end
return {2, body, redis.call('PTTL', KEYS[2]), user, user_ttl}
"""
_ANSWER_SHA = hashlib.sha1(_ANSWER.encode()).hexdigest()


def plain_question(body: Any) -> tuple[str, int] | None:
    """(symbol, horizon) when the body is a valid question the cache may answer."""
    if not isinstance(body, dict) or not body.keys() <= FIELDS:
        return None
    if body.get("use_cache", True) is not True:
        return None
    if body.get("warm_start", True) is not True:  # retraining: Django checks who may
        return None
    if body.get("strategy", STRATEGIES[0]) not in STRATEGIES:
        return None
    symbol, horizon = body.get("symbol"), body.get("horizon", DEFAULT_HORIZON)
    if not isinstance(symbol, str) or type(horizon) is not int or not 1 <= horizon <= MAX_HORIZON:
        return None
    try:
        return normalize_symbol(symbol), horizon
    except InvalidSymbol:
        return None


def counted_client(environ: dict[str, Any]) -> tuple[str, str, bool] | None:
    """(throttle scope, key, is a token) for an anonymous or a token client; None: the
    full path (another scheme, a session). For a token the key is its Redis key: the
    script looks the user up there."""
    header = environ.get("HTTP_AUTHORIZATION")
    if header is None:
        return "anon", client_ident(SimpleNamespace(META=environ)), False
    scheme, _, key = header.partition(" ")
    if scheme.lower() != "token" or not key.strip():
        return None
    return "user", tokens.redis_key(key.strip()), True


def wants_an_answer(environ: dict[str, Any]) -> bool:
    """A JSON POST with no query string and no session (browsers take the full path)."""
    if environ.get("QUERY_STRING") or not answer_cache.enabled():
        return False
    if f"{settings.SESSION_COOKIE_NAME}=" in environ.get("HTTP_COOKIE", ""):
        return False
    return environ.get("CONTENT_TYPE", "").partition(";")[0].strip() == "application/json"


def read_body(environ: dict[str, Any]) -> bytes | None:
    """The request body, put back for Django to read again; None when too big to look at."""
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return None
    if not 0 < length <= settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
        return None
    body = bytes(environ["wsgi.input"].read(length))
    environ["wsgi.input"] = io.BytesIO(body)
    return body


class _ThreadConnection(threading.local):
    client: Any = None
    connection: Any = None
    pid = 0


_wire = _ThreadConnection()


def run_answer_script(keys: list[str], argv: list[str | int]) -> Any:
    """The answer script, by EVALSHA on a Redis connection of this thread's own.

    Why: redis-py's command path (the pool's lock, a poll of the socket before every
    command, its retry and metrics wrappers) cost more CPU than the rest of the fast path.
    Any Redis error goes the ordinary way instead, which reconnects, retries and loads
    the script when Redis lost it.
    """
    client, wire = get_redis(), _wire
    if wire.client is not client or wire.pid != os.getpid():
        pool = client.connection_pool
        wire.client, wire.pid = client, os.getpid()
        wire.connection = pool.connection_class(**pool.connection_kwargs)
    connection = wire.connection
    try:
        command = connection.pack_command("EVALSHA", _ANSWER_SHA, len(keys), *keys, *argv)
        connection.send_packed_command(command, check_health=False)
        return connection.read_response()
    except RedisError:
        connection.disconnect()
        return script(_ANSWER)(keys, argv)


def answer(environ: dict[str, Any], body: bytes) -> tuple[int, Any] | None:
    """(HIT, the stored answer), (REFUSED, seconds until the window ends), or None for
    the full path."""
    try:
        question = plain_question(json.loads(body.decode()))
    except (ValueError, RecursionError):  # not JSON or UTF-8, or nested too deep: Django
        return None
    client = question and counted_client(environ)
    if question is None or client is None:
        return None
    scope, who, is_token = client
    rate = Rate.for_scope(scope)
    key = answer_cache.answer_key(*question)
    held = this_process()
    epoch = held.memory.current() if held else None
    if held and epoch is not None:
        known = from_memory(held, key, scope, who, is_token, rate)
        if known is not None:
            return known
    if is_token:  # the counter's name around the user id: window_key("user", <id>)
        prefix, _, suffix = window_key(scope, "\0", rate).partition("\0")
        counter, names = who, [prefix, suffix]
    else:
        counter, names = window_key(scope, who, rate), ["", ""]
    keys = [counter, key, event_metrics.METRICS_KEY]
    argv: list[str | int] = [rate.period, rate.limit, *names, *event_metrics.CACHE_HIT_FIELDS]
    outcome = run_answer_script(keys, argv)
    if outcome[0] == HIT:
        if held and epoch is not None:
            held.memory.keep(key, bytes(outcome[1]), int(outcome[2]), epoch)
            if is_token:
                held.memory.keep(who, bytes(outcome[3]), int(outcome[4]), epoch)
        return HIT, bytes(outcome[1])
    if outcome[0] == REFUSED:
        return REFUSED, retry_after(outcome[1])
    return None


def from_memory(
    held: Held, key: str, scope: str, who: str, is_token: bool, rate: Rate
) -> tuple[int, Any] | None:
    """The answer from this process's memory, its asker counted from a lease; None when
    the memory does not know the answer (or the token's user)."""
    body = held.memory.get(key)
    if body is None:
        return None
    if is_token:
        user = held.memory.get(who)
        if user is None:
            return None
        who = user.decode()
    wait = held.leases.spend(window_key(scope, who, rate), rate)
    if wait is not None:
        return REFUSED, wait
    event_metrics.count_cache_hit(None)  # sent with this process's other counts
    return HIT, body


class Held:
    """This process's memory of answers and tokens, and its rate-limit leases, kept by a
    thread of their own (`upkeep`)."""

    def __init__(self, client: Any) -> None:
        self.client, self.pid = client, os.getpid()
        self.memory = TrackedMemory(client, (answer_cache.PREFIX + ":", tokens.PREFIX))
        self.leases = Leases(client)
        threading.Thread(target=self.upkeep, name="answer-memory", daemon=True).start()

    def current(self) -> bool:
        return self.pid == os.getpid() and self.client is get_redis()

    def upkeep(self) -> None:
        """Once a second while this is the process's own: tracking on and checked, idle
        leases given back."""
        while self.current():
            try:
                self.memory.upkeep()
                self.leases.give_back_idle()
            except (RedisError, OSError):
                pass  # Redis away: the memory is off, the next second tries again
            except Exception:  # a fault here must not end the upkeep for good
                log.exception("the answers' memory upkeep failed")
            time.sleep(UPKEEP_SECONDS)
        self.memory.close()


UPKEEP_SECONDS = 1.0
_held: Held | None = None
_held_lock = threading.Lock()


def this_process() -> Held | None:
    """The process's `Held`, made on first use (after gunicorn forked it); None when
    ANSWER_MEMORY is off."""
    global _held
    if not settings.ANSWER_MEMORY:
        return None
    held = _held
    if held is None or not held.current():
        with _held_lock:
            if _held is None or not _held.current():
                _held = Held(get_redis())
            held = _held
    return held


def refusal(wait: int) -> HttpResponse:
    """The 429 of the full path's throttles, in the same words."""
    message = f"Request was throttled. Expected available in {wait} seconds."
    response = JsonResponse({"error": message, "status": 429}, status=429)
    response["Retry-After"] = str(wait)
    return response


Reply = tuple[str, list[tuple[str, str]], bytes]
# What Django's get_host and is_secure read (with SECURE_PROXY_SSL_HEADER's header): a
# request naming the same values gets the same verdict from ALLOWED_HOSTS and the security
# middleware.
WHERE = (
    "HTTP_HOST", "SERVER_NAME", "SERVER_PORT", "wsgi.url_scheme", "HTTP_X_FORWARDED_HOST",
    "HTTP_X_FORWARDED_PORT", "HTTP_X_FORWARDED_PROTO",
)  # fmt: skip


def where_names() -> tuple[str, ...]:
    proxy_header = settings.SECURE_PROXY_SSL_HEADER
    return WHERE + (proxy_header[0],) if proxy_header else WHERE


class Verdicts:
    """Django's middleware verdict on a request, kept per host and scheme: None (Django
    answers: a host not allowed, a redirect to HTTPS) or the headers it adds to a
    response. Forgotten when a setting changes (the tests change them)."""

    MOST = 64  # distinct hosts kept; a flood of made-up hosts only recomputes

    def __init__(self) -> None:
        self.security = SecurityMiddleware(lambda request: HttpResponse())
        self.framing = XFrameOptionsMiddleware(lambda request: HttpResponse())
        self.kept: dict[tuple[Any, ...], tuple[tuple[str, str], ...] | None] = {}
        self.names = where_names()
        setting_changed.connect(self.forget, weak=False)

    def forget(self, **kwargs: Any) -> None:
        self.kept, self.names = {}, where_names()

    def headers(self, environ: dict[str, Any]) -> tuple[tuple[str, str], ...] | None:
        where = tuple(environ.get(name) for name in self.names)
        try:
            return self.kept[where]
        except KeyError:
            pass
        verdict = self.work_out(WSGIRequest(environ))
        if len(self.kept) >= self.MOST:
            self.kept = {}
        self.kept[where] = verdict
        return verdict

    def work_out(self, request: WSGIRequest) -> tuple[tuple[str, str], ...] | None:
        try:
            request.get_host()  # ALLOWED_HOSTS, as Django checks it
        except DisallowedHost:
            return None  # Django answers 400
        if self.security.process_request(request) is not None:  # e.g. redirect to HTTPS
            return None
        response = self.apply(request, HttpResponse(content_type="application/json"))
        own = ("Content-Type", "Content-Length")
        return tuple((name, value) for name, value in response.items() if name not in own)

    def apply(self, request: WSGIRequest, response: HttpResponse) -> HttpResponse:
        self.security.process_response(request, response)
        return self.framing.process_response(request, response)


class CachedAnswerApp:
    """Wraps Django's WSGI application: plain cached questions are answered here."""

    def __init__(self, application: WSGIApplication) -> None:
        self.application = application
        self.path = reverse("prediction-list")
        self.verdicts = Verdicts()  # Django's own middleware: the headers every response gets

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if (
            environ.get("REQUEST_METHOD") == "POST"
            and environ.get("PATH_INFO") == self.path
            and wants_an_answer(environ)
        ):
            body = read_body(environ)
            reply = self._answer(environ, body) if body else None
            if reply is not None:
                status, headers, content = reply
                start_response(status, headers)
                return [content]
        return self.application(environ, start_response)

    def _answer(self, environ: dict[str, Any], body: bytes) -> Reply | None:
        extra = self.verdicts.headers(environ)
        if extra is None:
            return None
        try:
            outcome = answer(environ, body)
        except STORE_ERRORS:
            return self._reply(environ, store_down_response())
        if outcome is None:
            return None
        kind, value = outcome
        if kind == REFUSED:
            return self._reply(environ, refusal(value))
        headers = [("Content-Type", "application/json"), ("Content-Length", str(len(value)))]
        return "200 OK", [*headers, *extra], value

    def _reply(self, environ: dict[str, Any], response: HttpResponse) -> Reply:
        """A response Django would have made, with its middleware's headers (the rare ones:
        429 and 503)."""
        response = self.verdicts.apply(WSGIRequest(environ), response)
        status = f"{response.status_code} {response.reason_phrase}"
        return status, list(response.items()), response.content
