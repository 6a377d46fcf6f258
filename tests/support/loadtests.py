"""Helpers for the load-test tests: is a process still alive (zombies count as gone)?"""

from __future__ import annotations

from pathlib import Path


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def pids_in(pid_log: Path) -> list[int]:
    return [int(line.split()[0]) for line in pid_log.read_text().splitlines() if line.strip()]
