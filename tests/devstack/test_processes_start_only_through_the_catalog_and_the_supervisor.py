"""One way to start a process: command lines come from the catalog (launch/process_catalog.py, known
as launch/process_catalog.py) and long-running processes are started and stopped by
launch/groups.py (devstack/supervisor.py keeps sets of them), so a flag or a stop rule
changed there holds for the launcher, the load tools, the tests and the autoscaler."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MANAGE_ARGV = re.compile(r"""(executable|\[)\s*,?\s*(str\(ROOT / )?["']manage\.py["']""")
DEVSTACK_ARGV = re.compile(r"""["']-m["']\s*,\s*["']devstack\b""")
# A signal sent by hand; `os.kill(pid, 0)` only asks whether a process is alive.
KILL = re.compile(r"""\bos\.kill(pg)?\((?![^,]+,\s*0\s*\))""")
SPAWNER = "launch/groups.py"


def python_files(*skip: str) -> list[Path]:
    files = [p for p in ROOT.rglob("*.py") if ".venv" not in p.parts and "var" not in p.parts]
    return [p for p in files if str(p.relative_to(ROOT)) not in skip]


def test_no_manage_py_command_line_is_written_outside_the_catalog():
    offenders = [
        str(p.relative_to(ROOT))
        for p in python_files("launch/process_catalog.py", str(Path(__file__).relative_to(ROOT)))
        if MANAGE_ARGV.search(p.read_text(encoding="utf-8"))
        or DEVSTACK_ARGV.search(p.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_the_pattern_finds_a_hand_written_manage_py_command_line():
    assert MANAGE_ARGV.search('subprocess.run([sys.executable, "manage.py", "migrate"])')
    assert MANAGE_ARGV.search('argv = ["manage.py", "serve_stream"]')
    assert not MANAGE_ARGV.search('files = ("manage.py", "requirements.txt")')
    assert DEVSTACK_ARGV.search('sup.add("stack", [sys.executable, "-m", "devstack"])')
    assert not DEVSTACK_ARGV.search("spawn(processes.stack().argv(), env=env)")


def application_files() -> list[Path]:
    """Everything but the tests, except their shared helpers (tests/support)."""
    return [
        p
        for p in python_files(SPAWNER)
        if p.relative_to(ROOT).parts[0] != "tests" or p.parts[-2] == "support"
    ]


def test_only_the_supervisor_starts_the_projects_long_running_processes():
    offenders = [
        str(p.relative_to(ROOT))
        for p in application_files()
        if "subprocess.Popen(" in p.read_text(encoding="utf-8")
    ]
    assert offenders == []


def test_only_the_supervisor_signals_a_process():
    offenders = [
        str(p.relative_to(ROOT))
        for p in application_files()
        if KILL.search(p.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_the_pattern_finds_a_signal_sent_by_hand_but_not_a_liveness_probe():
    assert KILL.search("os.kill(worker.pid, signal.SIGTERM)")
    assert KILL.search("os.killpg(proc.pid, sig)")
    assert not KILL.search("os.kill(pid, 0)")
    assert not KILL.search("os.kill(int(entry.name), 0)")
