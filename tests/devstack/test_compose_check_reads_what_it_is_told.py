"""make compose-check's pure parts: where debootstrap takes Debian from, what is still
mounted inside its root, what Prometheus's and the API's answers mean, whether Grafana's
provisioning holds together, the report."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from devstack import compose_check
from devstack.compose_check import Run, Step
from launch.process_catalog import ROOT

DEB822 = """Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
"""


def test_debootstrap_takes_debian_from_apts_own_mirror():
    assert compose_check.debian_mirror(DEB822) == "http://deb.debian.org/debian"
    one_line = "deb [signed-by=/k.gpg] http://mirror.example/debian bookworm main\n"
    assert compose_check.debian_mirror(one_line) == "http://mirror.example/debian"
    assert compose_check.debian_mirror("deb http://security.debian.org bookworm main") is None


MOUNTS = """/dev/vda / ext4 rw 0 0
proc /work/var/tmp1/rootfs/proc proc rw 0 0
udev /work/var/tmp1/rootfs/dev devtmpfs rw 0 0
devpts /work/var/tmp1/rootfs/dev/pts devpts rw 0 0
proc /work/var/tmp1/rootfs-other/proc proc rw 0 0
tmpfs /work/var/tmp1/root\\040fs/run tmpfs rw 0 0
"""


def test_what_debootstrap_left_mounted_in_its_root_is_found_deepest_first():
    found = compose_check.mounts_under(Path("/work/var/tmp1/rootfs"), MOUNTS)
    assert found == [
        "/work/var/tmp1/rootfs/dev/pts",
        "/work/var/tmp1/rootfs/proc",
        "/work/var/tmp1/rootfs/dev",
    ]
    assert compose_check.mounts_under(Path("/work/var/tmp1/root fs"), MOUNTS) == [
        "/work/var/tmp1/root fs/run"
    ]
    assert compose_check.mounts_under(Path("/work/var/tmp2"), MOUNTS) == []


def test_a_folder_with_nothing_mounted_inside_is_removed(tmp_path):
    root = tmp_path / "rootfs"
    (root / "usr" / "bin").mkdir(parents=True)
    compose_check.remove_unmounted(root)
    assert not root.exists()


def test_sizes_read_as_docker_shows_them():
    assert compose_check.size_text(3_330_000_000) == "3.33 GB"
    assert compose_check.size_text(587_400_000) == "587 MB"


def test_prometheus_scrapes_web_only_when_every_target_is_up():
    def answer(*values: str) -> dict:
        return {"data": {"result": [{"value": [1.0, v]} for v in values]}}

    assert compose_check.web_is_up(answer("1"))
    assert not compose_check.web_is_up(answer("1", "0"))
    assert not compose_check.web_is_up(answer())
    rules = {"data": {"groups": [{"rules": [{}, {}]}, {"rules": [{}]}]}}
    assert compose_check.rule_count(rules) == 3


def test_a_prediction_is_in_flight_once_running_past_a_stage():
    stages = [{"stage": "prices", "queue": "io"}]
    assert compose_check.in_flight({"status": "running", "stages": stages}) == ["io"]
    assert compose_check.in_flight({"status": "running", "stages": []}) == []
    assert compose_check.in_flight({"status": "done", "stages": stages}) == []


def test_grafanas_provisioning_holds_together_and_a_broken_one_is_named(tmp_path):
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    files = compose_check.GRAFANA_FILES
    assert compose_check.grafana_problems(files, compose) == []

    copy = tmp_path / "files"
    shutil.copytree(files, copy)
    source = copy / "grafana" / "datasource.yml"
    source.write_text(source.read_text().replace("prometheus:9090", "localhost:9090"))
    del compose["services"]["grafana"]["volumes"]
    problems = compose_check.grafana_problems(copy, compose)
    assert len(problems) == 2 and "datasource" in problems[0] and "mount" in problems[1]


def test_the_report_gives_each_steps_time_and_the_sizes_against_before():
    run = Run([Step("build", 312.0, "2 images"), Step("ready", 40.5, "no", ok=False)])
    text = compose_check.report(run, {"web": 587_000_000})
    assert "ok     312.0 s  build: 2 images" in text
    assert "FAIL    40.5 s  ready: no" in text
    assert "image web: 587 MB (before: one image of 3.33 GB)" in text
