"""The glossary the code obeys (docs/architecture.md#glossary): a word that was retired
because it meant two things, or named a module's old home, fails this test where it
reappears in the code."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.support.call_path import APPLICATION

ROOT = Path(__file__).resolve().parents[2]
EVERYWHERE = (*APPLICATION, "launch", "devstack", "loadtests", "lab", "tests")

# (pattern, where it is retired, what says it now)
RETIRED = [
    (r"\bqueue_consumer\b|\bQueueConsumer\b", EVERYWHERE, "the stream consumer"),
    (r"\bserve_queue\b", EVERYWHERE, "manage.py serve_stream"),
    (r"\bqueue_clients\b", EVERYWHERE, "manage.py stream_clients"),
    (r"Client\(\s*f?[\"']queue", EVERYWHERE, 'a stream client\'s key, "stream:<name>"'),
    (r"\bgate=", EVERYWHERE, "submit(admission=...)"),
    (
        r"\buse_cache\b",
        ("workers", "market", "predictions", "registry", "marketdata", "plumbing"),
        "joinable= (use_cache is the API's field)",
    ),
    (r"\bsubmit\([^)\n]*\buse_cache=", EVERYWHERE, "submit(joinable=...)"),
    (r"related_name=\"cache_hits\"|\.cache_hits\.", EVERYWHERE, "followers"),
    (
        r"\b(request|prediction|leader|obj)\.cache_hit\b",
        EVERYWHERE,
        "no such column: a row is never a hit",
    ),
    (r"\bmark_done\b|\bmark_failed\b", EVERYWHERE, "predictions.final"),
    (r"\bwait_for_final\b", EVERYWHERE, "predictions.awaiting"),
    (r"\bPRECOMPUTE_PRIORITY\b", EVERYWHERE, "the watchlist's admission rank"),
    (r"from api\.errors import [^\n]*\bRefused\b", EVERYWHERE, "api.errors.RetryLater"),
    (
        r"\bfrom serving\b|\bimport serving\b|[\"'`]serving[./]\w",
        EVERYWHERE,
        "the app that holds it: predictions, workers, streams, batch, market or registry",
    ),
    (
        r"\bworkers[./](gate|pipeline|signatures|recovery|watchlist|batch|parts|stages"
        r"|stage_clock|stragglers|result_backend|faults|strategies"
        r"|(tasks|market|shadows)\b(?![./]\w+[\"']))",
        EVERYWHERE,
        "their home in predictions/, market/ or registry/ (task names keep their words)",
    ),
    (
        r"\bpredictions[./](model_registry|generations|model_health|market_clock|market_events"
        r"|track_record\w*|prices|mentions|price_store|sources|symbols|latency|redis_client"
        r"|redis_required|log_context|json_body|event_metrics|stats|forecasting|evaluation"
        r"|stages)\b",
        EVERYWHERE,
        "their home in registry/, market/, marketdata/, plumbing/ or forecasting/",
    ),
    (r"\bforecasting[./]doubt\b|\boos_doubt\b", EVERYWHERE, "forecasting.unsure"),
    (
        r"\bglobal_lstm\b|\bGlobalLSTM|\bGlobalNetwork\b|\bglobal_network\b|forecasting[./]_pooled"
        r"|from \._pooled\b|\bpooled_folds\b|\btrain_global_model\b|\bfine_tune_global|"
        r"\bGLOBAL_MODEL_\w+",
        EVERYWHERE,
        "nothing: the pooled network is gone (docs/models.md)",
    ),
    (
        r"(?<![\w/])benchmarks[./](?!md\b)|\bloadtests[./](abuse\w*|bench_\w+|cluster\w*|cpu\w*"
        r"|market_replay|noop_\w+|redis_kill_check|request_cost|step_load)\b",
        EVERYWHERE,
        "their home in lab/ (the offline evaluation's in forecasting/evaluation/)",
    ),
    (
        r"\bforecasting[./]online\b|\bhedge_weights\b|\brules_before\b|\bslow_predictions\b",
        EVERYWHERE,
        "nothing: retired (lab/README.md)",
    ),
]


def python_files(packages: tuple[str, ...]) -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", *(f"{p}/*.py" for p in packages)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [ROOT / name for name in listed if "/migrations/" not in name]


@pytest.mark.parametrize(("pattern", "where", "now"), RETIRED, ids=[r[2] for r in RETIRED])
def test_a_retired_word_does_not_come_back(pattern, where, now):
    this_file = Path(__file__).resolve()
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in python_files(where)
        if path.resolve() != this_file
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(pattern, line)
    ]
    assert not found, f"retired; say {now}:\n" + "\n".join(found)
