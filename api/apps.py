from django.apps import AppConfig


class ApiConfig(AppConfig):
    """The REST API: serializers, views, the cached-answer fast path, rate limits."""

    name = "api"

    def ready(self) -> None:
        from api import tokens

        tokens.connect_signals()
