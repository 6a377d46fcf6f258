from django.apps import AppConfig


class WorkersConfig(AppConfig):
    name = "workers"
    verbose_name = "Workers"

    def ready(self) -> None:
        # Connects the Celery signal handlers; registers the queue's Redis system check.
        from workers import lifecycle, queue_redis  # noqa: F401
