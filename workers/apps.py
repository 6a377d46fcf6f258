from django.apps import AppConfig


class WorkersConfig(AppConfig):
    name = "workers"
    verbose_name = "Workers"

    def ready(self) -> None:
        # Connects the Celery signal handlers.
        from workers import lifecycle  # noqa: F401
