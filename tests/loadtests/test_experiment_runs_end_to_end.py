"""The experiment runner on a tiny configuration: a real stack, the open-loop engine, a
report with its table and charts, and no process left behind, also after Ctrl-C.

The models are the cheap ones so the workers never load TensorFlow; the long experiment
runs only through `make experiment`.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.loadtests import alive, pids_in

pytestmark = pytest.mark.integration  # a whole stack of its own processes

ROOT = Path(__file__).resolve().parents[2]
TINY = [
    "--workers",
    "1",
    "--rate",
    "1",
    "--models",
    "naive,ridge",
    "--warmup",
    "1",
    "--drain",
    "30",
]


def experiment(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "loadtests.experiment", *TINY, "--reports", str(tmp_path), *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def only_report(tmp_path: Path) -> Path:
    (report,) = tmp_path.iterdir()
    return report


def test_it_writes_a_report_and_stops_everything(tmp_path):
    proc = experiment(tmp_path, "--strategies", "chord,cascade", "--duration", "4")
    output, _ = proc.communicate(timeout=400)
    assert proc.returncode == 0, output

    report = only_report(tmp_path)
    text = (report / "report.md").read_text()
    assert "| chord 1w | chord | 1 × 1 |" in text and "| cascade 1w | cascade | 1 × 1 |" in text
    for chart in ("latency.png", "throughput.png", "timeline.png"):
        assert (report / chart).read_bytes().startswith(b"\x89PNG"), chart
    results = json.loads((report / "results.json").read_text())
    for config in results["configurations"]:
        assert config["client"]["count"] >= 1 and config["client"]["errors"] == 0
        assert config["client"]["p50_ms"] <= config["client"]["p99_ms"]
        assert config["server"]["computed"] >= 1
        assert config["server"]["model_runs_trained"] == 1.0  # cold: every model trained
        assert config["server"]["typical"]["stages"]
    cascade = results["configurations"][1]["server"]
    assert cascade["escalation_rate"] == 0.0  # no deep model configured: the cheap ones answer
    data = report / "data" / "chord_1w"
    assert (data / "raw.csv").read_text().startswith("kind,name,started_at,latency_ms")
    assert (report / "data" / "1w" / "worker-w1.log").exists()
    pids = pids_in(report / "pids.txt")
    assert len(pids) == 3  # redis, web, worker
    assert [p for p in pids if alive(p)] == []


def test_ctrl_c_during_the_load_stops_everything_and_keeps_a_report(tmp_path):
    proc = experiment(tmp_path, "--strategies", "chord", "--duration", "300")
    assert proc.stdout is not None
    before = []  # what it said up to the load, shown if it ended another way
    for line in proc.stdout:
        before.append(line)
        if "/s for" in line:
            break
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=120)

    assert proc.returncode == 130, "".join(before) + output
    report = only_report(tmp_path)
    assert "interrupted by SIGINT" in (report / "report.md").read_text()
    pids = pids_in(report / "pids.txt")
    assert len(pids) >= 3
    assert [p for p in pids if alive(p)] == []
