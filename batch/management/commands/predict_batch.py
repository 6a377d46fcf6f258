"""`manage.py predict_batch`: predictions for many symbols and horizons, written to a file.

    python manage.py predict_batch --out var/forecasts.csv            # every offline symbol, 5 days
    python manage.py predict_batch --symbols AAPL,MSFT --horizons 1-5 --out f.parquet

Runs through the same workers as the API (start them first: `make run`, or
`manage.py start_worker`). Run it again after an interruption: the pairs already in the
file are kept and skipped.
"""

from __future__ import annotations

import signal
import sys
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from batch.files import Output
from batch.plan import BadPlan, make_plan
from batch.rows import Row
from batch.runner import BatchRunner
from plumbing.redis_required import require_redis


class Command(BaseCommand):
    help = "Predict many (symbol, horizon) pairs through the workers into a CSV or Parquet file."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--symbols", default="", help="AAPL,MSFT (default: every offline one)")
        parser.add_argument("--horizons", default="5", help="5, 1,5,20 or 1-5 (days)")
        parser.add_argument("--out", required=True, help="FILE.csv or FILE.parquet")
        parser.add_argument("--strategy", default=settings.DEFAULT_STRATEGY)
        parser.add_argument("--in-flight", type=int, default=2, help="pairs running at once")
        parser.add_argument(
            "--timeout", type=float, default=settings.PREDICTION_TIMEOUT, help="s per pair"
        )
        parser.add_argument("--fresh", action="store_true", help="never answer from the cache")
        parser.add_argument("--quiet", action="store_true", help="no progress bar")

    def handle(self, *args: Any, **options: Any) -> None:
        require_redis()
        if options["in_flight"] < 1 or options["timeout"] <= 0:
            raise CommandError("--in-flight must be at least 1 and --timeout above 0.")
        try:
            plan = make_plan(
                options["symbols"], options["horizons"], options["out"], options["strategy"]
            )
            output = Output(plan.out, plan.file_format)
            skip = output.resume()
        except BadPlan as exc:
            raise CommandError(str(exc)) from exc
        todo = [pair for pair in plan.pairs if pair not in skip]
        self.stdout.write(
            f"{len(plan.pairs)} pairs, {len(plan.pairs) - len(todo)} already in {plan.out}; "
            f"{len(todo)} to predict."
        )
        bar = tqdm(
            total=len(todo),
            unit="pair",
            disable=options["quiet"] or not sys.stderr.isatty(),
            file=sys.stderr,
        )

        def write(rows: list[Row]) -> None:
            output.append(rows)
            bar.update(1)

        runner = BatchRunner(
            plan.strategy,
            write,
            in_flight=options["in_flight"],
            fresh=options["fresh"],
            timeout_s=options["timeout"],
        )
        previous = signal.signal(signal.SIGTERM, _interrupt)  # stop as Ctrl-C does
        try:
            tally = runner.run(todo)
        except KeyboardInterrupt:
            bar.close()
            done = runner.tally.done + runner.tally.failed
            self.stderr.write(
                f"Interrupted: {done} pairs written to {plan.out}; run again to go on."
            )
            sys.exit(130)
        finally:
            signal.signal(signal.SIGTERM, previous)
        bar.close()
        summary = (
            f"{tally.done} done ({tally.from_cache} from the cache), {tally.failed} failed, "
            f"written to {plan.out}."
        )
        if tally.failed:
            raise CommandError(f"{summary} Run the command again to retry the failed pairs.")
        self.stdout.write(self.style.SUCCESS(summary))


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt
