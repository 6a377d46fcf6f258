"""A cached answer in one Redis round trip, before Django's request handling runs.

Why: an API client asking a question someone already asked should cost about what a plain
Django view costs. A DRF view with DRF's throttles costs several times the web CPU per
answer, and a middleware inside Django's stack still more than this WSGI wrapper (the
service's figures, and the command that measures them, are in docs/benchmarks.md). So a
plain question (a JSON body with a symbol and a horizon, no session cookie, no query
string, anonymous or with a token Redis knows) is answered here: one Lua script
counts the client in its rate-limit window, fetches the stored answer and counts the hit.
Django's own SecurityMiddleware and XFrameOptionsMiddleware still vet the request and
add their headers, so this path answers with the same headers as any other.

Everything else goes on to Django, which validates and explains errors, enforces CSRF for
browser sessions, joins identical requests in flight and queues new ones. A miss gives
back the rate-limit count it took, since the full path counts again. It is the pattern
WhiteNoise uses for static files: a WSGI wrapper around Django's application.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.core.handlers.wsgi import WSGIRequest
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.security import SecurityMiddleware
from django.urls import reverse

from api import tokens
from api.errors import STORE_ERRORS, store_down_response
from predictions import answer_cache, event_metrics
from predictions.forecasting.base import DEFAULT_HORIZON, MAX_HORIZON
from predictions.models import STRATEGIES
from predictions.rate_limits import Rate, client_ident, retry_after, window_key
from predictions.redis_client import script
from predictions.symbols import InvalidSymbol, normalize_symbol

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIApplication

FIELDS = frozenset({"symbol", "horizon", "strategy", "use_cache", "warm_start"})
REFUSED, MISS, HIT, UNKNOWN_TOKEN = 0, 1, 2, 3

# KEYS: the rate-limit counter (anonymous) or the token's key (token), answer, metrics hash.
# ARGV: window seconds, limit, counter prefix and suffix (token), hit fields...
# A token client's counter is named after its user id, which only Redis knows here: the
# lookup is in the script, so a token costs no second round trip (it cost 160 us of CPU).
_ANSWER = """
local counter = KEYS[1]
if ARGV[3] ~= '' then
  local user = redis.call('GET', KEYS[1])
  if not user then return {3} end
  counter = ARGV[3] .. user .. ARGV[4]
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
return {2, body}
"""


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


def counted_client(request: HttpRequest) -> tuple[str, str, bool] | None:
    """(throttle scope, key, is a token) for an anonymous or a token client; None: the
    full path (another scheme, a session). For a token the key is its Redis key: the
    script looks the user up there."""
    header = request.META.get("HTTP_AUTHORIZATION")
    if header is None:
        return "anon", client_ident(request), False
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


def answer(request: HttpRequest, body: bytes) -> HttpResponse | None:
    """The stored answer (200), a rate-limit refusal (429), or None for the full path."""
    try:
        question = plain_question(json.loads(body))
    except (ValueError, RecursionError):  # not JSON, or nested too deep: Django explains
        return None
    client = question and counted_client(request)
    if question is None or client is None:
        return None
    scope, who, is_token = client
    rate = Rate.for_scope(scope)
    if is_token:  # the counter's name around the user id: window_key("user", <id>)
        prefix, _, suffix = window_key(scope, "\0", rate).partition("\0")
        counter, names = who, [prefix, suffix]
    else:
        counter, names = window_key(scope, who, rate), ["", ""]
    keys = [counter, answer_cache.answer_key(*question), event_metrics.METRICS_KEY]
    argv: list[str | int] = [rate.period, rate.limit, *names, *event_metrics.CACHE_HIT_FIELDS]
    outcome = script(_ANSWER)(keys, argv)
    if outcome[0] == HIT:
        response = HttpResponse(outcome[1], content_type="application/json")
        response["Content-Length"] = str(len(outcome[1]))  # no chunked encoding
        return response
    if outcome[0] == REFUSED:
        wait = retry_after(outcome[1])
        message = f"Request was throttled. Expected available in {wait} seconds."
        response = JsonResponse({"error": message, "status": 429}, status=429)
        response["Retry-After"] = str(wait)
        return response
    return None


class CachedAnswerApp:
    """Wraps Django's WSGI application: plain cached questions are answered here."""

    def __init__(self, application: WSGIApplication) -> None:
        self.application = application
        self.path = reverse("prediction-list")
        # Django's own, for the headers (and the HTTPS redirect) every response gets.
        self.security = SecurityMiddleware(lambda request: HttpResponse())
        self.framing = XFrameOptionsMiddleware(lambda request: HttpResponse())

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if (
            environ.get("REQUEST_METHOD") == "POST"
            and environ.get("PATH_INFO") == self.path
            and wants_an_answer(environ)
        ):
            body = read_body(environ)
            response = self._answer(WSGIRequest(environ), body) if body else None
            if response is not None:
                start_response(
                    f"{response.status_code} {response.reason_phrase}", list(response.items())
                )
                return [response.content]
        return self.application(environ, start_response)

    def _answer(self, request: WSGIRequest, body: bytes) -> HttpResponse | None:
        try:
            request.get_host()  # ALLOWED_HOSTS, as Django checks it
        except DisallowedHost:
            return None  # Django answers 400
        if self.security.process_request(request) is not None:  # e.g. redirect to HTTPS
            return None
        try:
            response = answer(request, body)
        except STORE_ERRORS:
            response = store_down_response()
        if response is None:
            return None
        self.security.process_response(request, response)
        return self.framing.process_response(request, response)
