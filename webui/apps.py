from django.apps import AppConfig


class WebuiConfig(AppConfig):
    name = "webui"
    verbose_name = "Web UI"

    def ready(self) -> None:
        from webui import checks  # noqa: F401 - registers the system checks
