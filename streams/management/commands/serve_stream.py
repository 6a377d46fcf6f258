"""`manage.py serve_stream`: answer the stream clients' questions (streams/stream_consumer.py)."""

from __future__ import annotations

import os
import signal
import socket
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from plumbing.redis_required import require_redis
from streams.stream_consumer import serve


class Command(BaseCommand):
    help = "Read questions from the input Redis Stream, answer them on the output stream."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--name", default=f"{socket.gethostname()}-{os.getpid()}")

    def handle(self, *args: Any, **options: Any) -> None:
        require_redis()
        stopping: list[int] = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda signum, frame: stopping.append(signum))
        self.stdout.write(f"serving the queue as {options['name']}")
        serve(options["name"], lambda: bool(stopping))
