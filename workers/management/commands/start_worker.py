"""Start a Celery worker on the right queues, with GPU detection and TF warm-up.

    python manage.py start_worker --queues io,cpu --concurrency 2 --name cpu1

A GPU found by the Keras backend (or WORKER_GPU=on) adds the `gpu` queue. Each pool
process warms up for its queues right after it forks (`workers.process_warmup`) and then
counts itself warm.

`spare` (anonymous and background questions, `predictions/lanes.py`) is consumed by a worker of
its own, which lowers its CPU priority to SPARE_WORKER_NICE (`--nice`) before it starts, so
its pool processes run on the CPU the other workers leave.

`--pool threads` runs the tasks as threads of one process: one copy of each network, and
the deep models' forward passes from concurrent requests with the same weights batched
into one call (`forecasting.batching`). `auto` (the default) picks it for a
worker with a GPU, whose device one process should hold, and prefork otherwise. Celery's
time limits do not apply to threads (a model stage waits on a forward pass at most the
soft time limit); the request's latency objective and deadline still do.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from plumbing.redis_required import require_redis
from workers.gpu import detect_gpu
from workers.process_warmup import recipes_worked_out_apart
from workers.queue_routing import GPU, QUEUES, SPARE


class Command(BaseCommand):
    help = "Start a Celery worker for the prediction pipeline (queues io, cpu, gpu, spare)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--queues",
            default="io,cpu",
            help="comma-separated: io, cpu, gpu, scoring; or spare alone",
        )
        parser.add_argument("--concurrency", type=int, default=2)
        parser.add_argument(
            "--autoscale",
            default="",
            help="MAX,MIN pool processes: Celery grows the pool while tasks wait (bounded by "
            "free memory, WORKER_PROCESS_MB each) and shrinks it when idle; replaces "
            "--concurrency",
        )
        parser.add_argument("--name", default="worker", help="node name; host is appended")
        parser.add_argument("--gpu", default=settings.WORKER_GPU, help="auto, on or off")
        parser.add_argument(
            "--max-memory-per-child",
            type=int,
            default=settings.WORKER_MAX_MEMORY_MB,
            help="MB of resident memory after which a pool process is replaced (0: never)",
        )
        parser.add_argument(
            "--max-tasks-per-child",
            type=int,
            default=0,
            help="tasks after which a pool process is replaced (0: never, the default: the "
            "replacement warms up while the pool waits)",
        )
        parser.add_argument(
            "--pool",
            choices=("auto", "prefork", "threads"),
            default=settings.WORKER_POOL,
            help="prefork: a process per task; threads: one process whose tasks share the "
            "networks and batch their forward passes; auto: threads with a GPU",
        )
        parser.add_argument(
            "--nice",
            type=int,
            default=None,
            help="niceness to run at (default: SPARE_WORKER_NICE for a spare worker, else "
            "the one it was started with)",
        )
        parser.add_argument("--loglevel", default="INFO")
        parser.add_argument("--beat", action="store_true", help="also run the periodic sweeper")

    def handle(self, *args: Any, **options: Any) -> None:
        require_redis()
        queues = [q.strip() for q in options["queues"].split(",") if q.strip()]
        unknown = sorted(set(queues) - set(QUEUES))
        if unknown or not queues:
            raise CommandError(
                f"Unknown queue(s) {', '.join(unknown) or '(none given)'}; "
                f"choose from {', '.join(QUEUES)}."
            )
        spare = SPARE in queues
        if spare and len(queues) > 1:
            raise CommandError(
                "spare is consumed by a worker of its own (it runs at a lower CPU priority): "
                "start one with --queues spare."
            )
        if options["concurrency"] < 1:
            raise CommandError("--concurrency must be at least 1.")
        pool = ["-c", str(options["concurrency"])]
        if options["autoscale"]:
            pool = ["--autoscale", ",".join(map(str, parse_autoscale(options["autoscale"])))]
        try:
            has_gpu = detect_gpu(options["gpu"])
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        threads = options["pool"] == "threads" or (options["pool"] == "auto" and has_gpu)
        if threads:
            if options["autoscale"]:
                raise CommandError("--autoscale grows processes: it needs --pool prefork.")
            pool = ["-P", "threads", "-c", str(options["concurrency"])]
        if has_gpu and GPU not in queues and not spare:
            queues.append(GPU)
        if not has_gpu and GPU in queues:
            self.stderr.write("No GPU found: consuming 'gpu' anyway, TensorFlow runs on the CPU.")
        env = {
            **os.environ,
            "WORKER_HAS_GPU": "1" if has_gpu else "0",
            "WORKER_QUEUES": ",".join(queues),  # what each pool process warms up for
            "WORKER_POOL": "threads" if threads else "prefork",
            **recipes_worked_out_apart(set(queues)),
        }
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        argv = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "-Q",
            ",".join(queues),
            *pool,
            "-n",
            f"{options['name']}@%h",
            *recycling(options["max_memory_per_child"], options["max_tasks_per_child"]),
            "-l",
            options["loglevel"],
        ]
        if options["beat"]:
            argv += ["-B", "-s", str(settings.VAR_DIR / "celerybeat-schedule")]
        self.stdout.write(
            f"Starting worker {options['name']} on queues {','.join(queues)} "
            f"({'threads' if threads else 'prefork'} pool)"
        )
        wanted = options["nice"]
        if wanted is None and spare:
            wanted = settings.SPARE_WORKER_NICE
        niceness = lower_priority(wanted)
        if niceness:
            self.stdout.write(f"Running at niceness {niceness}")
        sys.stdout.flush()
        os.execve(sys.executable, argv, env)


def lower_priority(niceness: int | None) -> int:
    """Raise this process's niceness to `niceness` (its pool inherits it); never lower it,
    which needs privileges. Returns the niceness it runs at."""
    current = os.nice(0)
    if niceness is not None and niceness > current:
        current = os.nice(niceness - current)
    return current


def recycling(max_memory_mb: int, max_tasks: int) -> list[str]:
    """Celery's options for replacing pool processes; none when both are 0."""
    argv = []
    if max_memory_mb > 0:
        argv += ["--max-memory-per-child", str(max_memory_mb * 1024)]  # Celery counts KiB
    if max_tasks > 0:
        argv += ["--max-tasks-per-child", str(max_tasks)]
    return argv


def parse_autoscale(text: str) -> tuple[int, int]:
    """`MAX,MIN` as Celery reads it, checked: 1 <= MIN <= MAX."""
    parts = [p.strip() for p in text.split(",")]
    try:
        high, low = (int(parts[0]), int(parts[1])) if len(parts) == 2 else (int(parts[0]), 1)
    except ValueError:
        raise CommandError(f"--autoscale takes MAX,MIN pool processes, got {text!r}.") from None
    if not 1 <= low <= high:
        raise CommandError(f"--autoscale needs 1 <= MIN <= MAX, got {text!r}.")
    return high, low
