from django.apps import AppConfig


class ApiConfig(AppConfig):
    """The REST API: serializers, views, the cached-answer fast path, rate limits."""

    name = "api"

    def ready(self) -> None:
        from api import tokens
        from plumbing import db_health

        tokens.connect_signals()
        db_health.connect_web()
