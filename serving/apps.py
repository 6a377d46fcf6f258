from django.apps import AppConfig


class ServingConfig(AppConfig):
    name = "serving"
    verbose_name = "Serving"

    def ready(self) -> None:
        # Registers the stream interface's Redis system check.
        from serving import stream_redis  # noqa: F401
