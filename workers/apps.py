from django.apps import AppConfig


class WorkersConfig(AppConfig):
    name = "workers"
    verbose_name = "Workers"

    def ready(self) -> None:
        from workers import lifecycle  # noqa: F401  (connects the Celery signal handlers)
