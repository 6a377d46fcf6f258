"""A Celery worker whose model and sentiment stages are no-ops (see bench_overhead.py).

    python -m lab.noop_worker --concurrency 2

Consumes io and cpu like the experiment's workers; also runs the bare reference chord.
"""

from __future__ import annotations

import argparse
import os


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--name", default="noop")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from lab import bench_tasks, noop_stages  # noqa: F401 - registers the bare chord

    noop_stages.install()
    from config.celery_app import app

    app.worker_main(
        [
            "worker",
            "-Q",
            "io,cpu",
            "-c",
            str(args.concurrency),
            "-n",
            f"{args.name}@%h",
            "-l",
            "WARNING",
            "-E",
        ]
    )


if __name__ == "__main__":
    main()
