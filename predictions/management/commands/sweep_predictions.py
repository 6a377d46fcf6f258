"""Mark requests past their deadline failed, as the periodic beat task does.

    python manage.py sweep_predictions
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from predictions.models import PredictionRequest


class Command(BaseCommand):
    help = "Fail prediction requests that passed their deadline (worker lost, task lost)."

    def handle(self, *args: Any, **options: Any) -> None:
        count = PredictionRequest.objects.fail_stale()
        self.stdout.write(f"{count} stale request(s) marked failed.")
