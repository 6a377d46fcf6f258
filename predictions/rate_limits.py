"""Rate limits as fixed-window counters in Redis: one INCR per request and limit.

Why not DRF's SimpleRateThrottle: it keeps a list of timestamps per client in the cache
and reads and rewrites the whole list on every request (a GET and a SET of a growing
pickled list); under load that was a third of a cached answer's cost. A fixed window
allows at most twice the rate across a window boundary, which is the usual trade.

The rates are REST_FRAMEWORK's DEFAULT_THROTTLE_RATES; the API's throttles
(api/throttles.py), its cached-answer fast path and the admin sign-in all count here.
"""

from __future__ import annotations

import functools
import ipaddress
import math
import time
from dataclasses import dataclass
from typing import Any, cast

from django.conf import settings

from plumbing.redis_client import script

PREFIX = "stockserve:throttle"

# KEYS: counters. ARGV: each one's window seconds. Returns the requests in each window.
# (The seconds left are the window's: windows are aligned to the epoch, `window_key`.)
_COUNT = """
local used = {}
for i, key in ipairs(KEYS) do
  used[i] = redis.call('INCR', key)
  if used[i] == 1 then redis.call('EXPIRE', key, ARGV[i]) end
end
return used
"""


@dataclass(frozen=True)
class Rate:
    limit: int
    period: int  # seconds

    @classmethod
    def for_scope(cls, scope: str) -> Rate:
        """The scope's rate in REST_FRAMEWORK's DEFAULT_THROTTLE_RATES."""
        rates = cast("dict[str, str]", settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"])
        return cls.parse(rates[scope])

    @staticmethod
    @functools.lru_cache(maxsize=16)
    def parse(text: str) -> Rate:
        """'120/min' -> Rate(120, 60), as DRF reads it (the unit's first letter counts)."""
        count, unit = text.split("/")
        return Rate(int(count), {"s": 1, "m": 60, "h": 3600, "d": 86400}[unit[0]])


def address_key(address: str) -> str:
    """Who an address is, as a client: an IPv4 address itself, an IPv6 address its /64.

    Why: one IPv6 host is usually given a whole /64 and may use any address in it, so
    keying by the full address would give it 2^64 clients' worth of rate limit, admission
    places and connections. An IPv4-mapped IPv6 address is its IPv4 address; anything
    that is not an address is kept as it is.
    """
    if ":" not in address:
        return address  # IPv4 (or no address): the cached path's common case, no parsing
    return _ipv6_key(address)


@functools.lru_cache(maxsize=4096)
def _ipv6_key(address: str) -> str:
    try:
        parsed = ipaddress.IPv6Address(address.strip("[]").split("%", 1)[0])
    except ValueError:
        return address
    if parsed.ipv4_mapped is not None:
        return str(parsed.ipv4_mapped)
    return str(ipaddress.IPv6Network((parsed, 64), strict=False))


@functools.lru_cache(maxsize=4096)
def pool_key(address: str) -> str:
    """Who an anonymous client is where it shares places with other anonymous clients
    (admission, `?wait` slots, joins): an IPv6 address its /48, an IPv4 address itself.

    Why a /48: it is what one site is given (RFC 6177; tunnel brokers hand one out free),
    so its 65,536 /64s cost one holder nothing and would otherwise crowd out every other
    anonymous client. IPv4 stays per address: a host has one, more are bought or leased
    one by one, and an ISP's /24 is up to 254 unrelated subscribers who would share one
    client's part. Rate limits and websockets keep `address_key`'s /64: a limit per
    request's cost belongs to the host, which a /64 is. Takes an address or an
    `address_key`; anything that is not an address is kept as it is.
    """
    key = address_key(address)
    if ":" not in key:
        return key
    try:
        network = ipaddress.IPv6Network(key, strict=False)
    except ValueError:
        return key
    return str(network.supernet(new_prefix=48)) if network.prefixlen > 48 else str(network)


def client_ident(request: Any) -> str:
    """The client's address key (`address_key`), trusting X-Forwarded-For only as far as
    NUM_PROXIES says.

    DRF's `get_ident`, read from META directly: building `request.headers` showed in the
    cached path's profile (lab/records/benchmarks.md).
    """
    return address_key(_client_address(request))


def _client_address(request: Any) -> str:
    return forwarded_client(
        str(request.META.get("REMOTE_ADDR", "")),
        request.META.get("HTTP_X_FORWARDED_FOR"),
        cast("int | None", settings.REST_FRAMEWORK.get("NUM_PROXIES")),
    )


def forwarded_client(peer: str, x_forwarded_for: str | None, num_proxies: int | None) -> str:
    """The client's address by NUM_PROXIES's rule, for HTTP and websockets alike: with 0
    the socket's `peer` (any X-Forwarded-For is the client's own words); with N the N-th
    address from the right of X-Forwarded-For, the one the client-facing proxy of the N
    trusted ones appended, so entries a client put to the left of it change nothing.
    None (NUM_PROXIES unset, DRF's meaning) takes the whole header.
    """
    if num_proxies is not None:
        if num_proxies == 0 or not x_forwarded_for:
            return peer
        addresses = x_forwarded_for.split(",")
        return str(addresses[-min(num_proxies, len(addresses))].strip())
    return "".join(x_forwarded_for.split()) if x_forwarded_for else peer


def window_key(scope: str, ident: str, rate: Rate, now: float | None = None) -> str:
    window = int((time.time() if now is None else now) // rate.period)
    return f"{PREFIX}:{scope}:{ident}:{window}"


def retry_after(seconds_left: int) -> int:
    return max(1, int(seconds_left))


def allows(scope: str, ident: str) -> tuple[bool, int]:
    """Count one request for `ident` in `scope`'s window: (allowed, seconds left)."""
    return allows_each([(scope, ident)])


def allows_each(counted: list[tuple[str, str]]) -> tuple[bool, int]:
    """Count one request in each (scope, ident)'s window, in one round trip: whether every
    limit allows it, and the seconds left in the longest window that refuses (or in the
    first window, when all allow)."""
    now = time.time()
    rates = [Rate.for_scope(scope) for scope, _ in counted]
    keys = [
        window_key(scope, ident, rate, now)
        for (scope, ident), rate in zip(counted, rates, strict=True)
    ]
    used = script(_COUNT)(keys, [rate.period for rate in rates])
    left = [rate.period - now % rate.period for rate in rates]
    refused = [s for n, rate, s in zip(used, rates, left, strict=True) if int(n) > rate.limit]
    return not refused, retry_after(math.ceil(max(refused) if refused else left[0]))
