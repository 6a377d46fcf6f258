"""Run the autoscaling controller in the foreground (`make run` starts it when AUTOSCALE=1).

    python manage.py autoscale

Any number may run: one leads (a Redis lock), the others wait to take over.
"""

from __future__ import annotations

import signal
import threading
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from plumbing.redis_required import require_redis
from provisioning.autoscale.controller import Controller


class Command(BaseCommand):
    help = "Add and drain workers on queue wait (AUTOSCALE_* settings)."

    def handle(self, *args: Any, **options: Any) -> None:
        require_redis()
        try:
            controller = Controller.from_settings()
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        stop = threading.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.set())
        self.stdout.write(
            f"Autoscaler: {controller.backend.name} workers, limits "
            + ", ".join(f"{q}={lim.minimum}-{lim.maximum}" for q, lim in controller.limits.items())
        )
        controller.run(stop)
