"""The monitoring role keeps Prometheus, node-exporter and Alertmanager off the network
unless Prometheus asks for a password, and sends alerts to a receiver: run as an operator
runs `monitoring.yml`, it refuses a public listener without basic auth, an exporter off
loopback and alerts with nowhere to go, before changing anything; what it writes for an
accepted setting passes promtool's checks and names an Alertmanager and a receiver."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

PLAYBOOKS = Path(__file__).resolve().parents[2] / "playbooks"
ROLE = PLAYBOOKS / "roles" / "monitoring"
TOKEN = "t0k3n-" + "abcdefghijklmnopqrstuvwxyz0123456789"
GOOD = {
    "stockserve_metrics_token": TOKEN,
    "monitoring_alert_webhook_url": "https://hooks.internal.example/stockserve-oncall",
}
# bcrypt("a-long-grafana-password"), 2^4 rounds: promtool checks the form, not the password.
HASH = "$2b$04$D8OtyL5tLwhAYIjbNAdK8u5lqDIMABz9gVqWqrBfekofwrRBIIC.6"


def ansible(tmp_path: Path, playbook: Path, extravars: dict[str, object], inventory: dict):
    host = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    inventory = {
        "all": {"children": {group: {"hosts": {"localhost": host}} for group in inventory}}
    }
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump(inventory))
    (tmp_path / "vars.yml").write_text(yaml.safe_dump(extravars))
    env = {**os.environ, "ANSIBLE_CONFIG": str(PLAYBOOKS / "ansible.cfg")}
    env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"
    argv = ["ansible-playbook", "-i", str(tmp_path / "inventory.yml"), str(playbook)]
    argv += ["--limit", "localhost", "-e", f"@{tmp_path / 'vars.yml'}"]
    return subprocess.run(argv, cwd=PLAYBOOKS, env=env, capture_output=True, text=True,
                          timeout=300)  # fmt: skip


@pytest.mark.parametrize(
    ("changes", "sentence"),
    [
        ({"monitoring_listen_address": "0.0.0.0:9090"}, "is not a loopback address"),
        ({"monitoring_listen_address": "10.0.0.9:9090", "monitoring_web_users": {"g": "pw"}},
         "must be a bcrypt hash"),
        ({"monitoring_node_exporter_address": "0.0.0.0:9100"}, "must be loopback addresses"),
        ({"monitoring_alertmanager_address": "10.0.0.9:9093"}, "must be loopback addresses"),
        ({"monitoring_alert_webhook_url": ""}, "Alerts need a receiver"),
        ({"monitoring_alert_webhook_url": "https://hooks.example.com/change-me"},
         "Alerts need a receiver"),
    ],
)  # fmt: skip
def test_the_playbook_refuses_before_changing_anything(tmp_path, changes, sentence):
    result = ansible(tmp_path, PLAYBOOKS / "monitoring.yml", GOOD | changes, ["monitoring"])
    assert result.returncode != 0
    assert sentence in result.stdout and "changed=0" in result.stdout
    assert "pw" not in result.stdout.replace("password", "")  # names the variable only


def render(tmp_path: Path, extravars: dict[str, object]) -> Path:
    """The role's checks, then its templates written into tmp_path/out (as on the host)."""
    out = tmp_path / "out"
    out.mkdir()
    templates = ["prometheus.yml", "web.yml", "alertmanager.yml", "prometheus.default",
                 "node-exporter.default", "alertmanager.default"]  # fmt: skip
    play = [{
        "name": "Render the monitoring role", "hosts": "monitoring", "gather_facts": False,
        "vars_files": [str(ROLE / "defaults" / "main.yml")],
        "tasks": [
            {"ansible.builtin.import_tasks": str(ROLE / "tasks" / "checks.yml")},
            {"ansible.builtin.template": {"src": f"{ROLE}/templates/{{{{ item }}}}.j2",
                                          "dest": f"{out}/{{{{ item }}}}", "mode": "0600"},
             "loop": templates},
        ],
    }]  # fmt: skip
    (tmp_path / "render.yml").write_text(yaml.safe_dump(play))
    result = ansible(tmp_path, tmp_path / "render.yml", extravars, ["monitoring", "web"])
    assert result.returncode == 0, result.stdout[-3000:]
    return out


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("promtool")
    if binary is None:
        pytest.fail("promtool is not installed: run `make packages` (Debian package prometheus).")
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=60)


def test_by_default_everything_listens_on_loopback_and_alerts_reach_the_webhook(tmp_path):
    out = render(tmp_path, GOOD)
    for name, port in (("prometheus", 9090), ("node-exporter", 9100), ("alertmanager", 9093)):
        assert (
            f'ARGS="--web.listen-address=127.0.0.1:{port}' in (out / f"{name}.default").read_text()
        )
    assert '--cluster.listen-address="' in (out / "alertmanager.default").read_text()  # no gossip
    assert "web.config.file" not in (out / "prometheus.default").read_text()

    checked = promtool("check", "config", "--syntax-only", str(out / "prometheus.yml"))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    prometheus = yaml.safe_load((out / "prometheus.yml").read_text())
    [manager] = prometheus["alerting"]["alertmanagers"]
    assert manager["static_configs"] == [{"targets": ["127.0.0.1:9093"]}]
    jobs = {job["job_name"]: job for job in prometheus["scrape_configs"]}
    assert jobs["node"]["static_configs"] == [{"targets": ["127.0.0.1:9100"]}]
    assert jobs["stockserve"]["static_configs"] == [{"targets": ["localhost:443"]}]

    alertmanager = yaml.safe_load((out / "alertmanager.yml").read_text())
    [receiver] = alertmanager["receivers"]
    assert alertmanager["route"]["receiver"] == receiver["name"]
    assert receiver["webhook_configs"][0]["url"] == GOOD["monitoring_alert_webhook_url"]
    if shutil.which("amtool"):  # Debian's prometheus-alertmanager, on the monitoring host
        amtool = subprocess.run(["amtool", "check-config", str(out / "alertmanager.yml")],
                                capture_output=True, text=True, timeout=60)  # fmt: skip
        assert amtool.returncode == 0, amtool.stdout + amtool.stderr


def test_off_loopback_prometheus_asks_for_a_password_and_email_is_a_receiver(tmp_path):
    out = render(tmp_path, {
        "stockserve_metrics_token": TOKEN,
        "monitoring_listen_address": "10.0.0.9:9090",
        "monitoring_web_users": {"grafana": HASH},
        "monitoring_alert_email_to": "oncall@example.org",
        "monitoring_alert_smtp_smarthost": "smtp.example.org:587",
        "monitoring_alert_smtp_from": "prometheus@example.org",
    })  # fmt: skip
    args = (out / "prometheus.default").read_text()
    assert "--web.listen-address=10.0.0.9:9090 --web.config.file=/etc/prometheus/web.yml" in args
    web = promtool("check", "web-config", str(out / "web.yml"))
    assert web.returncode == 0, web.stdout + web.stderr
    assert yaml.safe_load((out / "web.yml").read_text()) == {"basic_auth_users": {"grafana": HASH}}
    alertmanager = yaml.safe_load((out / "alertmanager.yml").read_text())
    assert alertmanager["receivers"][0]["email_configs"] == [
        {"to": "oncall@example.org", "send_resolved": True}
    ]
    assert alertmanager["global"]["smtp_smarthost"] == "smtp.example.org:587"


def test_a_trial_without_a_receiver_is_allowed_only_when_said(tmp_path):
    out = render(tmp_path, {"stockserve_metrics_token": TOKEN, "monitoring_alerts_unrouted": True})
    [receiver] = yaml.safe_load((out / "alertmanager.yml").read_text())["receivers"]
    assert set(receiver) == {"name"}  # Alertmanager's null receiver: pages nobody, as said
