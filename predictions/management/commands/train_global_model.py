"""Train the global model's pooled network on every known symbol and serve it.

    python manage.py train_global_model            # from scratch (read from the disk cache
                                                   # when these data and params were trained)
    python manage.py train_global_model --fine-tune  # the serving network on the new bars

Nothing has to run it: with `global_lstm` in PREDICTION_MODELS, the first worker that finds
no pooled network trains it while it warms up (the others wait), and a new market day
fine-tunes it. This is the operator's way to train it ahead, or again.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from predictions import global_network
from predictions.redis_required import require_redis


class Command(BaseCommand):
    help = "Train (or --fine-tune) the pooled network of global_lstm and make it serve."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--fine-tune", action="store_true", help="learn the new bars only")

    def handle(self, *args: Any, fine_tune: bool, **options: Any) -> None:
        require_redis()
        step = global_network.fine_tune if fine_tune else global_network.train
        generation = step(worker="manage.py train_global_model")
        self.stdout.write(
            f"pooled network generation {generation.generation} ({generation.mode}): "
            f"{len(generation.metrics.get('symbols', []))} symbols to "
            f"{generation.data_last_date}, {generation.fit_seconds:.1f} s"
        )
