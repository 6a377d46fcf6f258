"""DRF throttles over the fixed-window counters of `predictions.rate_limits`."""

from __future__ import annotations

from typing import Any

from rest_framework.throttling import BaseThrottle

from predictions.rate_limits import Rate, allows_each, client_ident, window_key


def client_key(request: Any) -> str:
    """Who a DRF request comes from: an account, else an address."""
    if request.user.is_authenticated:
        return f"user:{request.user.pk}"
    return f"anon:{client_ident(request)}"


class FixedWindowThrottle(BaseThrottle):
    """Counts the request in its client's current window; refuses beyond the rate."""

    scope = ""

    def __init__(self) -> None:
        self.seconds_left = 0

    def ident(self, request: Any) -> str | None:
        """Who is counted, or None when this throttle does not apply to the request."""
        raise NotImplementedError

    def allow_request(self, request: Any, view: Any) -> bool:
        ident = self.ident(request)
        if ident is None:
            return True
        allowed, self.seconds_left = count_in([(self.scope, ident)])
        return allowed

    def wait(self) -> float | None:
        return self.seconds_left


class AnonymousThrottle(FixedWindowThrottle):
    """Clients without credentials, by address: an IPv4 address, an IPv6 /64 (THROTTLE_ANON)."""

    scope = "anon"

    def ident(self, request: Any) -> str | None:
        return None if request.user.is_authenticated else client_ident(request)


class UserThrottle(FixedWindowThrottle):
    """Authenticated users, by account (THROTTLE_USER)."""

    scope = "user"

    def ident(self, request: Any) -> str | None:
        return str(request.user.pk) if request.user.is_authenticated else None


def counted_with(
    request: Any, throttle_classes: Any, more: list[tuple[str, str]]
) -> tuple[bool, int]:
    """Count the request in what its view's throttles count and in `more` (scope, ident):
    (allowed, seconds to wait). For a view that decides after parsing the body what else
    counts (a fresh run's "expensive" limit) and skips DRF's own throttle call."""
    windows = []
    for throttle_class in throttle_classes:
        throttle = throttle_class()
        ident = throttle.ident(request) if isinstance(throttle, FixedWindowThrottle) else None
        if ident is not None:
            windows.append((throttle.scope, ident))
    windows += more
    return count_in(windows) if windows else (True, 0)


def count_in(windows: list[tuple[str, str]]) -> tuple[bool, int]:
    """Count one request in each (scope, ident)'s window: (allowed by every one, seconds
    to wait). From this process's leases of the windows, as a cached answer counts (most
    requests then cost Redis nothing: a client reading its request's status, a fresh
    run); with the answers' memory off, in Redis, one script for all."""
    from api import hotpath  # here: hotpath imports DRF, whose settings import us

    held = hotpath.this_process()
    if held is None:
        return allows_each(windows)
    waits = []
    for scope, ident in windows:
        rate = Rate.for_scope(scope)
        wait = held.leases.spend(window_key(scope, ident, rate), rate)
        if wait is not None:
            waits.append(wait)
    return not waits, max(waits, default=0)
