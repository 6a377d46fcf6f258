"""How many websockets this ASGI process holds open, in all and per address.

Why: every open socket holds memory, a group membership in the channel layer and a task
that rejoins it; nothing bounded them, so one address could open sockets until the
process or Redis gave out. Now a process holds at most WS_MAX_CONNECTIONS, and one
address (an IPv6 /64, `predictions.rate_limits.address_key`, found as HTTP finds it:
`address_of`) at most WS_MAX_CONNECTIONS_PER_ADDRESS; beyond either, the handshake is
refused with a close code and a reason that names only the asking address's own use.

A socket counts from its handshake until its consumer ends, whichever way it ends. The
consumers of one process run on one event loop and nothing here awaits, so plain counters
need no lock.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, cast

from django.conf import settings

from predictions.rate_limits import address_key, forwarded_client

PER_ADDRESS_CODE = 4429  # like HTTP 429: this address holds its share
FULL_CODE = 1013  # RFC 6455 "Try Again Later": the server is at its bound

_open: Counter[str] = Counter()
_total = 0


@dataclass(frozen=True)
class Refusal:
    code: int
    reason: str  # at most 123 bytes: a close frame's limit


def address_of(scope: dict[str, Any]) -> str:
    """The client's address key, by the rule HTTP's rate limits use (`forwarded_client`
    with REST_FRAMEWORK["NUM_PROXIES"]): the socket's peer, or behind N trusted proxies
    the N-th address from the right of X-Forwarded-For.

    Why here and not uvicorn's proxy headers: uvicorn trusts X-Forwarded-For from
    127.0.0.1 by default, so behind a proxy that does not set it a client chose its own
    address, and with the proxy on another host it trusted none; `--forwarded-allow-ips`
    names proxies, not a count, so it cannot say what NUM_PROXIES says. The catalog
    starts uvicorn with `--no-proxy-headers` (scope["client"] is the peer) and one
    function decides for both protocols.
    """
    client = scope.get("client")
    peer = str(client[0]) if client else ""
    forwarded = [
        value.decode("latin-1")
        for name, value in scope.get("headers", ())
        if name.lower() == b"x-forwarded-for"
    ]
    proxies = cast("int | None", settings.REST_FRAMEWORK.get("NUM_PROXIES"))
    return address_key(forwarded_client(peer, ",".join(forwarded) or None, proxies))


def take(address: str) -> Refusal | None:
    """Count one socket for `address`, or say why not (nothing is counted then)."""
    global _total
    if _open[address] >= settings.WS_MAX_CONNECTIONS_PER_ADDRESS:
        return Refusal(
            PER_ADDRESS_CODE,
            f"You already have {_open[address]} websockets open here, the most one address "
            "may; close one first.",
        )
    if _total >= settings.WS_MAX_CONNECTIONS:
        return Refusal(FULL_CODE, "This server holds all the websockets it can; try again soon.")
    _open[address] += 1
    _total += 1
    return None


def give_back(address: str) -> None:
    """The socket `take` counted has ended."""
    global _total
    _total -= 1
    _open[address] -= 1
    if _open[address] <= 0:
        del _open[address]


def open_count(address: str | None = None) -> int:
    """Sockets counted now (for one address, or all): tests wait on it."""
    return _open[address] if address is not None else _total
