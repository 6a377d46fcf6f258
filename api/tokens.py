"""API tokens, known to Redis too, so the cached-answer fast path needs no database.

DRF's TokenAuthentication reads the token table on every request. The fast path asks
Redis instead (a digest of the key, never the key itself); a miss there goes the full way,
where `CachedTokenAuthentication` checks the table and records the answer for
TOKEN_CACHE_SECONDS. Deleting a token or deactivating its user forgets it at once.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.utils import timezone
from redis.exceptions import RedisError
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token
from rest_framework.exceptions import AuthenticationFailed, Throttled

from plumbing.redis_client import get_redis
from predictions.rate_limits import allows, client_ident

PREFIX = "stockserve:token:"
INVALID_PREFIX = "stockserve:token-invalid:"
TOKEN_CACHE_SECONDS = 300
INVALID_CACHE_SECONDS = 60
log = logging.getLogger(__name__)


def redis_key(token: str) -> str:
    """Where Redis keeps the token's user id (the fast path's script reads it)."""
    return PREFIX + hashlib.sha256(token.encode()).hexdigest()


def remember(token: str, user_id: int, ttl: int = TOKEN_CACHE_SECONDS) -> None:
    get_redis().set(redis_key(token), str(user_id), ex=max(1, ttl))


def forget(token: str) -> None:
    get_redis().delete(redis_key(token))


def _invalid_key(token: str) -> str:
    return INVALID_PREFIX + hashlib.sha256(token.encode()).hexdigest()


class CachedTokenAuthentication(TokenAuthentication):
    """DRF's token check, with an expiry (TOKEN_TTL_DAYS), which also tells Redis (for the
    fast path) what it found, for no longer than the token has left.

    A wrong token costs one database lookup per INVALID_CACHE_SECONDS (Redis remembers it
    was wrong), and counts against the address like a failed sign-in (THROTTLE_LOGIN):
    guessing tokens is refused with 429 like guessing passwords."""

    def authenticate(self, request: Any) -> tuple[Any, Token] | None:
        try:
            return super().authenticate(request)
        except AuthenticationFailed:
            allowed, wait = allows("login", client_ident(request))
            if not allowed:
                raise Throttled(wait=wait) from None
            raise

    def authenticate_credentials(self, key: str) -> tuple[Any, Token]:
        with contextlib.suppress(RedisError):
            if get_redis().exists(_invalid_key(key)):
                raise AuthenticationFailed("Invalid token.")
        try:
            user, token = super().authenticate_credentials(key)
        except AuthenticationFailed:
            with contextlib.suppress(RedisError):
                get_redis().set(_invalid_key(key), 1, ex=INVALID_CACHE_SECONDS)
            raise
        expires = token.created + timedelta(days=settings.TOKEN_TTL_DAYS)
        left = (expires - timezone.now()).total_seconds()
        if left <= 0:
            raise AuthenticationFailed(
                f"This token expired on {expires:%Y-%m-%d}; create a new one with "
                "`manage.py create_api_token NAME --rotate`."
            )
        with contextlib.suppress(RedisError):  # only the fast path loses: this one passed
            remember(key, user.pk, ttl=min(TOKEN_CACHE_SECONDS, int(left)))
        return user, token


def _forget_now_and_after_commit(key: str) -> None:
    """Now, and again once the change is committed: a request that read the token from the
    database before the commit may have remembered it in between."""

    def forget_quietly() -> None:
        try:
            forget(key)
        except RedisError:  # the fast path may know it for up to TOKEN_CACHE_SECONDS more
            log.warning("could not forget a revoked token in Redis; it expires by itself")

    forget_quietly()
    transaction.on_commit(forget_quietly)


def _token_deleted(sender: Any, instance: Token, **kwargs: Any) -> None:
    _forget_now_and_after_commit(instance.key)


def _user_saved(sender: Any, instance: Any, **kwargs: Any) -> None:
    if not instance.is_active:
        for key in Token.objects.filter(user=instance).values_list("key", flat=True):
            _forget_now_and_after_commit(key)


def connect_signals() -> None:
    post_delete.connect(_token_deleted, sender=Token, dispatch_uid="stockserve-token-deleted")
    post_save.connect(_user_saved, sender=get_user_model(), dispatch_uid="stockserve-user-saved")
