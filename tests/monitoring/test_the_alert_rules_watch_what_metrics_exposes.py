"""The Prometheus rules pass promtool's checks and unit tests, and every metric they and the
Grafana dashboard read is one /metrics really exposes (a renamed family would otherwise
leave an alert that can never fire)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

FILES = Path(__file__).resolve().parents[2] / "playbooks" / "roles" / "monitoring" / "files"
RULES, RULE_TESTS = FILES / "stockserve-rules.yml", FILES / "stockserve-rules.test.yml"
DASHBOARD = FILES / "stockserve-dashboard.json"
SERIES = re.compile(r"\bstockserve_[a-z_]+\b")
RECORDED = re.compile(r"\bstockserve:[a-z0-9_:]+\b")


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("promtool")
    if binary is None:
        pytest.fail("promtool is not installed: run `make packages` (Debian package prometheus).")
    return subprocess.run([binary, *args], cwd=FILES, capture_output=True, text=True, timeout=60)


def test_promtool_checks_the_rules_and_their_unit_tests_pass():
    checked = promtool("check", "rules", RULES.name)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = promtool("test", "rules", RULE_TESTS.name)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "SUCCESS" in tested.stdout


def rule_expressions() -> list[str]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [rule["expr"] for group in groups for rule in group["rules"]]


def dashboard_expressions() -> list[str]:
    panels = json.loads(DASHBOARD.read_text())["panels"]
    return [target["expr"] for panel in panels for target in panel["targets"]]


@pytest.mark.django_db
def test_every_series_the_rules_and_the_dashboard_read_is_exposed(client, settings):
    settings.METRICS_TOKEN = "a-token-for-this-test"
    scrape = client.get("/metrics", HTTP_AUTHORIZATION="Bearer a-token-for-this-test")
    assert scrape.status_code == 200
    exposed: set[str] = set()
    for family in text_string_to_metric_families(scrape.content.decode()):
        suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_sum", "_count"]}
        exposed |= {family.name + s for s in suffixes.get(family.type, [""])}

    read = {
        name
        for expr in rule_expressions() + dashboard_expressions()
        for name in SERIES.findall(expr)
    }
    assert read and read <= exposed, sorted(read - exposed)
    recorded = {rule.get("record") for group in yaml.safe_load(RULES.read_text())["groups"]
                for rule in group["rules"]}  # fmt: skip
    used = {
        name
        for expr in dashboard_expressions() + rule_expressions()
        for name in RECORDED.findall(expr)
    }
    assert used <= recorded, sorted(used - recorded)
