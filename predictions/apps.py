from django.apps import AppConfig


class PredictionsConfig(AppConfig):
    name = "predictions"
    verbose_name = "Predictions"

    def ready(self) -> None:
        from predictions import checks  # noqa: F401 - registers the system checks
