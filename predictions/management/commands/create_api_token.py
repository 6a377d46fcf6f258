"""Create (or show) the API token of a user, creating the user when needed.

python manage.py create_api_token alice
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser
from rest_framework.authtoken.models import Token


class Command(BaseCommand):
    help = "Print an API token for USERNAME (the user is created if missing)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--staff", action="store_true", help="make the user staff")
        parser.add_argument("--rotate", action="store_true", help="replace an existing token")

    def handle(self, *args: Any, username: str, staff: bool, rotate: bool, **options: Any) -> None:
        user, created = get_user_model().objects.get_or_create(username=username)
        if created:
            user.set_unusable_password()
        if staff:
            user.is_staff = True
        user.save()
        if rotate:
            Token.objects.filter(user=user).delete()
        token, _ = Token.objects.get_or_create(user=user)
        self.stdout.write(token.key)
