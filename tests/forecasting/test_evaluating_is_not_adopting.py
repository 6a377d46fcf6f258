"""`make evaluate` writes only under var/ (or --out); the service's tables change only when
an operator adopts a full run, and then they name the run that made them."""

from __future__ import annotations

import datetime
import hashlib
import json

import pytest

from forecasting import volatility
from forecasting.calibration import TABLE_PATH, Calibration
from forecasting.evaluation import evaluate
from forecasting.scorecard import SCORECARD_PATH


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("evaluation")
    served = {path: digest(path) for path in (TABLE_PATH, SCORECARD_PATH)}
    argv = ["--symbols", "AAPL", "--models", "naive", "ridge", "--horizons", "1", "5"]
    evaluate.main([*argv, "--out", str(out)])
    return out, served


def test_a_run_writes_its_report_and_candidate_tables_and_leaves_the_service_alone(small_run):
    out, served = small_run

    assert {p.name for p in out.iterdir()} >= {"results.json", "tables.md", "calibration.json",
                                              "scorecard.json", "bands.png"}  # fmt: skip
    assert {path: digest(path) for path in served} == served
    candidate = Calibration.from_dict(json.loads((out / "calibration.json").read_text()))
    assert candidate.source.startswith("not adopted")


def test_a_partial_run_cannot_be_adopted(small_run):
    out, served = small_run

    with pytest.raises(SystemExit, match="partial run"):
        evaluate.adopt(out)
    assert {path: digest(path) for path in served} == served


def test_adopting_a_full_run_copies_its_tables_and_names_the_run(small_run, tmp_path, monkeypatch):
    out, _ = small_run
    full = tmp_path / "run"
    full.mkdir()
    report = json.loads((out / "results.json").read_text())
    report["run"]["full"] = True
    (full / "results.json").write_text(json.dumps(report))
    (tmp_path / "evaluation.md").write_text(
        "prose\n<!-- evaluate:begin -->\n<!-- evaluate:end -->\n"
    )
    table, card = tmp_path / "calibration.json", tmp_path / "scorecard.json"
    monkeypatch.setattr(evaluate, "TABLE_PATH", table)
    monkeypatch.setattr(evaluate, "SCORECARD_PATH", card)
    monkeypatch.setattr(evaluate, "DOCS", tmp_path / "docs")
    monkeypatch.setattr(evaluate, "DOC_PAGE", tmp_path / "evaluation.md")

    source = evaluate.adopt(full)

    adopted = Calibration.from_dict(json.loads(table.read_text()))
    assert adopted.source == source
    assert report["run"]["commit"] in source
    assert hashlib.sha256((full / "results.json").read_bytes()).hexdigest()[:12] in source
    assert adopted.band["method"] in ("residual", *volatility.METHODS)
    assert adopted.seen_until["AAPL"] == datetime.date(2012, 2, 29)
    assert json.loads(card.read_text())["held_out"]["seen_until"]["AAPL"] == "2012-02-29"
    assert json.loads(card.read_text())["source"] == source
    page = (tmp_path / "evaluation.md").read_text()
    assert "chosen on the tune windows" in page and "Against GARCH(1,1)-t" in page
