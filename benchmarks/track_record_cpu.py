"""CPU of one anonymous track-record call, cold and warm.

    .venv/bin/python -m benchmarks.track_record_cpu [--records 250] [--calls 20]

A private redis-server and a throwaway SQLite database; `--records` forecasts of record for
MSFT at horizon 30, each fully scored for the ensemble and ten members (five models and
their shadows: 250 records are 82,500 score rows). Each window is asked once after the
cache was emptied (cold) and then `--calls` times (warm), through Django's test client
(the whole view: routing, the query, JSON rendering). CPU is this process's
`time.process_time`; the database and Redis servers' own CPU is not in it (SQLite is).
The same run measures TRACK_RECORD_CACHE_MB=0 (no cache) as the reference.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path
from typing import Any

MODELS = ["naive", "ridge", "arima", "lstm", "tcn"]


def _services(workdir: str) -> Any:
    from devstack.redis import EmbeddedRedis

    redis = EmbeddedRedis(workdir=os.path.join(workdir, "redis")).start()
    os.environ["REDIS_URL"] = redis.url
    os.environ["DATABASE_URL"] = f"sqlite:///{Path(workdir) / 'db.sqlite3'}"
    os.environ.setdefault("THROTTLE_ANON", "100000/min")
    os.environ.setdefault("THROTTLE_EXPENSIVE", "100000/min")
    os.environ.setdefault("PRICE_PROVIDERS", "sample")
    os.environ.setdefault("MENTION_PROVIDERS", "sample")
    os.environ.setdefault("PRECOMPUTE_SYMBOLS", "")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    return redis


def _records(count: int, horizon: int) -> None:
    from predictions.models import ForecastRecord, ForecastScore

    members = MODELS + [f"{m}~shadow" for m in MODELS]
    first = date(2020, 1, 1)
    records = ForecastRecord.objects.bulk_create(
        ForecastRecord(
            symbol="MSFT",
            horizon=horizon,
            as_of=first + timedelta(days=i),
            as_of_close=100.0 + i % 7,
            public=True,
            level=0.8,
            path=[100.0 + s * 0.1 for s in range(horizon)],
            lower=[98.0 + s * 0.1 for s in range(horizon)],
            upper=[102.0 + s * 0.1 for s in range(horizon)],
            members={
                m: {"path": [100.0] * horizon, "weight": 0.1, "generation": 1} for m in members
            },
            scored_steps=horizon,
        )
        for i in range(count)
    )
    scores = [
        ForecastScore(
            record=record,
            model=model,
            step=step,
            date=record.as_of + timedelta(days=step),
            forecast=100.0,
            realized=100.0 + step * 0.05,
            log_error=-0.001 * step,
            covered=True if model == ForecastScore.ENSEMBLE else None,
            interval_score=1.5 if model == ForecastScore.ENSEMBLE else None,
        )
        for record in records
        for model in [ForecastScore.ENSEMBLE, *members]
        for step in range(1, horizon + 1)
    ]
    ForecastScore.objects.bulk_create(scores, batch_size=5000)


def _cpu(client: Any, url: str) -> tuple[float, int]:
    started = time.process_time()
    response = client.get(url, HTTP_HOST="127.0.0.1")
    spent = time.process_time() - started
    assert response.status_code == 200, response.content[:300]
    return spent, len(response.content)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=250)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="track-record-bench-")
    redis = _services(workdir)
    try:
        import django

        django.setup()
        from django.conf import settings
        from django.core.management import call_command
        from django.test import Client

        from predictions.models import ForecastScore

        call_command("migrate", verbosity=0)
        _records(args.records, 30)
        print(f"{args.records} records, {ForecastScore.objects.count()} score rows")
        client = Client()
        cache_mb = getattr(settings, "TRACK_RECORD_CACHE_MB", None)
        for window in (500, 60):
            url = f"/api/v1/symbols/MSFT/track-record/?horizon=30&window={window}"
            for label, setting in (("no cache", 0), ("cache", cache_mb)):
                if label == "cache" and cache_mb is None:
                    continue
                settings.TRACK_RECORD_CACHE_MB = setting
                _forget()
                cold, size = _cpu(client, url)
                warm = [_cpu(client, url)[0] for _ in range(args.calls)]
                print(
                    f"window={window:<4} {label:<9} cold {cold * 1000:8.1f} ms CPU, warm median "
                    f"{statistics.median(warm) * 1000:8.1f} ms CPU over {args.calls} calls "
                    f"({size} bytes)"
                )
    finally:
        redis.stop()
    return 0


def _forget() -> None:
    """Empty the track-record cache, when this version of the code has one."""
    try:
        from predictions import track_record_cache
    except ImportError:
        return
    track_record_cache.forget()


if __name__ == "__main__":
    sys.exit(main())
