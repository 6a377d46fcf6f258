"""CPU-quota slices: the quota arithmetic, finding the cpu controller, the files a host's
group is made of (a temporary directory stands in for /sys/fs/cgroup), and, where this
machine lets us, a real group that limits and counts a busy process."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lab.cluster import Quota
from lab.cpu_quota import (
    CGROUP_ROOT,
    Layout,
    QuotaSlices,
    Throttling,
    detect,
    quota_us,
    unavailable_reason,
)
from tests.support.waiting import eventually


def files(root: Path, contents: dict[str, str]) -> Path:
    for relative, text in contents.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    return root


def v1(root: Path) -> Layout:
    files(root, {"cpu/cpu.cfs_quota_us": "-1\n", "cpuacct/cpuacct.usage": "0\n"})
    layout = detect(root)
    assert layout is not None
    return layout


def v2(root: Path) -> Layout:
    files(root, {"cgroup.controllers": "cpuset cpu io memory pids\n"})
    layout = detect(root)
    assert layout is not None
    return layout


def test_a_quota_is_the_share_of_each_period_the_cores_amount_to():
    assert quota_us(0.3, 10_000) == 3000
    assert quota_us(1.5, 100_000) == 150_000
    assert quota_us(0.25, 4000) == 1000


@pytest.mark.parametrize(
    "cores, period_us",
    [(0.05, 10_000), (0.0, 10_000), (-1.0, 10_000), (0.3, 500), (0.3, 2_000_000)],
)
def test_a_quota_under_the_kernels_minimum_or_an_impossible_period_is_refused(cores, period_us):
    with pytest.raises(ValueError):
        quota_us(cores, period_us)


def test_v1_with_separate_cpu_and_cpuacct_hierarchies(tmp_path):
    assert v1(tmp_path) == Layout(1, tmp_path / "cpu", tmp_path / "cpuacct")


def test_v1_with_cpu_and_cpuacct_mounted_together_counts_where_it_limits(tmp_path):
    files(tmp_path, {"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpuacct.usage": "0\n"})

    layout = detect(tmp_path)

    assert layout == Layout(1, tmp_path / "cpu", tmp_path / "cpu")
    assert layout.hierarchies == (tmp_path / "cpu",)


def test_v1_cpu_without_an_accounting_hierarchy_is_not_enough(tmp_path):
    files(tmp_path, {"cpu/cpu.cfs_quota_us": "-1\n"})

    assert detect(tmp_path) is None


def test_v2_unified_with_the_cpu_controller(tmp_path):
    assert v2(tmp_path) == Layout(2, tmp_path, tmp_path)


def test_v2_mounted_beside_v1_as_unified(tmp_path):
    files(tmp_path, {"unified/cgroup.controllers": "cpu\n"})

    assert detect(tmp_path) == Layout(2, tmp_path / "unified", tmp_path / "unified")


def test_a_unified_hierarchy_without_the_cpu_controller_is_not_enough(tmp_path):
    files(tmp_path, {"unified/cgroup.controllers": "\n", "cgroup.controllers": "memory\n"})

    assert detect(tmp_path) is None
    assert "no cgroup cpu controller" in (unavailable_reason(tmp_path) or "")


def test_a_v1_host_group_gets_its_period_then_its_quota_and_an_accounting_twin(tmp_path):
    layout = v1(tmp_path)
    slices = QuotaSlices(layout, name="run")

    group = slices.add("host1", 0.3, 10_000)

    cpu = tmp_path / "cpu" / "run" / "host1"
    assert (cpu / "cpu.cfs_period_us").read_text() == "10000"
    assert (cpu / "cpu.cfs_quota_us").read_text() == "3000"
    assert (tmp_path / "cpuacct" / "run" / "host1").is_dir()
    assert group.directories() == [cpu, tmp_path / "cpuacct" / "run" / "host1"]


def test_a_v2_host_group_gets_cpu_max_and_the_controller_handed_down_to_it(tmp_path):
    layout = v2(tmp_path)

    QuotaSlices(layout, name="run").add("host1", 0.3, 10_000)

    assert (tmp_path / "run" / "host1" / "cpu.max").read_text() == "3000 10000"
    assert (tmp_path / "cgroup.subtree_control").read_text() == "+cpu"
    assert (tmp_path / "run" / "cgroup.subtree_control").read_text() == "+cpu"


def test_a_bad_quota_makes_no_group(tmp_path):
    slices = QuotaSlices(v1(tmp_path), name="run")

    with pytest.raises(ValueError):
        slices.add("host1", 0.01, 10_000)
    assert not (tmp_path / "cpu" / "run").exists()


def test_a_process_moves_into_the_group_in_every_hierarchy(tmp_path):
    group = QuotaSlices(v1(tmp_path), name="run").add("host1", 0.3, 10_000)

    assert group.add(41) and group.add(42)

    assert (tmp_path / "cpu/run/host1/cgroup.procs").read_text() == "41\n42\n"
    assert (tmp_path / "cpuacct/run/host1/cgroup.procs").read_text() == "41\n42\n"
    assert group.pids() == {41, 42}


def test_a_process_in_only_one_hierarchy_is_not_in_the_group(tmp_path):
    group = QuotaSlices(v1(tmp_path), name="run").add("host1", 0.3, 10_000)
    files(tmp_path, {"cpu/run/host1/cgroup.procs": "41\n42\n",
                     "cpuacct/run/host1/cgroup.procs": "42\n"})  # fmt: skip

    assert group.pids() == {42}


def test_v1_usage_and_throttling_come_from_cpuacct_usage_and_cpu_stat(tmp_path):
    group = QuotaSlices(v1(tmp_path), name="run").add("host1", 0.3, 10_000)
    files(tmp_path, {
        "cpuacct/run/host1/cpuacct.usage": "2500000000\n",
        "cpu/run/host1/cpu.stat": "nr_periods 100\nnr_throttled 40\nthrottled_time 1500000000\n",
    })  # fmt: skip

    assert group.usage_seconds() == 2.5
    assert group.throttling() == Throttling(100, 40, 1.5)


def test_v2_usage_and_throttling_come_from_cpu_stat(tmp_path):
    group = QuotaSlices(v2(tmp_path), name="run").add("host1", 0.3, 10_000)
    files(tmp_path, {"run/host1/cpu.stat": "usage_usec 2500000\nuser_usec 2000000\n"
                     "nr_periods 100\nnr_throttled 40\nthrottled_usec 1500000\n"})  # fmt: skip

    assert group.usage_seconds() == 2.5
    assert group.throttling() == Throttling(100, 40, 1.5)


def test_closing_moves_what_is_left_to_the_root_group_and_says_what_stayed(tmp_path):
    slices = QuotaSlices(v1(tmp_path), name="run")
    slices.add("host1", 0.3, 10_000).add(41)

    problems = slices.close()

    assert (tmp_path / "cpu" / "cgroup.procs").read_text() == "41\n"
    assert (tmp_path / "cpuacct" / "cgroup.procs").read_text() == "41\n"
    assert problems  # a plain directory with files in it cannot be rmdir'ed, unlike a cgroup


def test_closing_slices_that_made_nothing_does_nothing(tmp_path):
    assert QuotaSlices(v1(tmp_path), name="run").close() == []
    assert not (tmp_path / "cpu" / "run").exists()


def test_a_quota_host_finds_the_live_processes_outside_its_group(tmp_path):
    quota = Quota(v1(tmp_path), 0.3, 10_000)
    quota.confine("host1", os.getpid())
    gone = 2**22 + 1  # above the kernel's pid_max: no such process

    assert quota.strays("host1", [os.getpid(), os.getppid(), gone]) == [os.getppid()]
    assert quota.describe("host1")["quota_us"] == 3000


def real_cgroups_reason() -> str | None:
    if os.geteuid() != 0:
        return "making cgroups needs root"
    return unavailable_reason(CGROUP_ROOT)


@pytest.mark.skipif(real_cgroups_reason() is not None, reason=str(real_cgroups_reason()))
def test_a_real_group_counts_a_busy_process_and_holds_it_near_its_quota():
    layout = detect(CGROUP_ROOT)
    assert layout is not None
    slices = QuotaSlices(layout, name=f"stockserve-test-quota-{os.getpid()}")
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        group = slices.add("host1", 0.2, 10_000)
        assert group.add(busy.pid)
        moved = time.monotonic()
        assert group.pids() == {busy.pid}

        eventually(lambda: group.usage_seconds() >= 0.3, 30, "0.3 s of CPU counted")

        cores = group.usage_seconds() / (time.monotonic() - moved)
        throttling = group.throttling()
        assert cores <= 0.2 * 1.25  # held to its quota (a busy machine may give it less)
        assert throttling.throttled > 0 and throttling.throttled_s > 0
    finally:
        busy.kill()
        busy.wait()
        problems = slices.close()
    assert problems == []
    assert not any(directory.exists() for directory in group.directories())
    assert not (layout.cpu / slices.name).exists()
