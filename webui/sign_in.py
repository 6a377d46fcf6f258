"""The admin sign-in, rate limited per address (THROTTLE_LOGIN).

Django's admin accepts password guesses as fast as they come; staff accounts open the
dashboard, the workers page and the admin, so attempts are counted in a fixed window per
client address and refused beyond it with 429 and Retry-After.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.http import HttpRequest, HttpResponse
from redis.exceptions import RedisError

from predictions.rate_limits import allows, client_ident


def throttled(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    @wraps(view)
    def sign_in(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.method == "POST":
            try:
                allowed, wait = allows("login", client_ident(request))
            except RedisError:  # attempts cannot be counted: refuse them, say so
                response = HttpResponse(
                    "Sign-in is unavailable for a moment (its attempt counter cannot be "
                    "reached); try again in 5 s.",
                    status=503,
                    content_type="text/plain; charset=utf-8",
                )
                response["Retry-After"] = "5"
                return response
            if not allowed:
                response = HttpResponse(
                    f"Too many sign-in attempts from your address; try again in {wait} s.",
                    status=429,
                    content_type="text/plain; charset=utf-8",
                )
                response["Retry-After"] = str(wait)
                return response
        return view(request, *args, **kwargs)

    return sign_in
