"""API tokens, known to Redis too, so the cached-answer fast path needs no database.

DRF's TokenAuthentication reads the token table on every request. The fast path asks
Redis instead (a digest of the key, never the key itself); a miss there goes the full way,
where `CachedTokenAuthentication` checks the table and records the answer for
TOKEN_CACHE_SECONDS. Deleting a token or deactivating its user forgets it at once.
"""

from __future__ import annotations

import contextlib
import hashlib
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models.signals import post_delete, post_save
from django.utils import timezone
from redis.exceptions import RedisError
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token
from rest_framework.exceptions import AuthenticationFailed

from predictions.redis_client import get_redis

PREFIX = "stockserve:token:"
TOKEN_CACHE_SECONDS = 300


def redis_key(token: str) -> str:
    """Where Redis keeps the token's user id (the fast path's script reads it)."""
    return PREFIX + hashlib.sha256(token.encode()).hexdigest()


def remember(token: str, user_id: int, ttl: int = TOKEN_CACHE_SECONDS) -> None:
    get_redis().set(redis_key(token), str(user_id), ex=max(1, ttl))


def forget(token: str) -> None:
    get_redis().delete(redis_key(token))


class CachedTokenAuthentication(TokenAuthentication):
    """DRF's token check, with an expiry (TOKEN_TTL_DAYS), which also tells Redis (for the
    fast path) what it found, for no longer than the token has left."""

    def authenticate_credentials(self, key: str) -> tuple[Any, Token]:
        user, token = super().authenticate_credentials(key)
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


def _token_deleted(sender: Any, instance: Token, **kwargs: Any) -> None:
    forget(instance.key)


def _user_saved(sender: Any, instance: Any, **kwargs: Any) -> None:
    if not instance.is_active:
        for key in Token.objects.filter(user=instance).values_list("key", flat=True):
            forget(key)


def connect_signals() -> None:
    post_delete.connect(_token_deleted, sender=Token, dispatch_uid="stockserve-token-deleted")
    post_save.connect(_user_saved, sender=get_user_model(), dispatch_uid="stockserve-user-saved")
