"""The memory-aware maximum of the pool autoscaler, from the kernel's own figure."""

from __future__ import annotations

from workers.pool_autoscale import available_mb, processes_that_fit


def test_as_many_processes_as_free_memory_holds_after_the_reserve():
    assert processes_that_fit(4, free_mb=3000, process_mb=600, reserve_mb=1024) == 3
    assert processes_that_fit(2, free_mb=3000, process_mb=600, reserve_mb=1024) == 2
    assert processes_that_fit(4, free_mb=1500, process_mb=600, reserve_mb=1024) == 0
    assert processes_that_fit(4, free_mb=None, process_mb=600, reserve_mb=1024) == 4


def test_it_reads_memavailable_from_meminfo(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24000000 kB\nMemAvailable:    2048000 kB\n")
    assert available_mb(meminfo) == 2000
    assert available_mb(tmp_path / "missing") is None
    assert available_mb() is not None  # this machine's /proc/meminfo
