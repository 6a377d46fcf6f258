"""An API token works until TOKEN_TTL_DAYS have passed, then says how to get a new one."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.authtoken.models import Token

URL = "/api/v1/predictions/"
pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def test_a_fresh_token_works_and_an_old_one_is_refused(api_client, settings, django_user_model):
    settings.TOKEN_TTL_DAYS = 30
    token = Token.objects.create(user=django_user_model.objects.create_user("bot"))
    api_client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert api_client.get(URL).status_code == 200
    Token.objects.filter(key=token.key).update(created=timezone.now() - timedelta(days=31))
    refused = api_client.get(URL)
    assert refused.status_code == 401
    assert "expired" in refused.json()["error"] and "--rotate" in refused.json()["error"]
