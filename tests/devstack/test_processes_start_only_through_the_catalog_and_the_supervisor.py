"""One way to start a process: command lines come from devstack/processes.py and
long-running processes are started by devstack/supervisor.py, so a flag or a stop rule
changed there holds for the launcher, the load tools, the tests and the autoscaler."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MANAGE_ARGV = re.compile(r"""(executable|\[)\s*,?\s*(str\(ROOT / )?["']manage\.py["']""")


def python_files(*skip: str) -> list[Path]:
    files = [p for p in ROOT.rglob("*.py") if ".venv" not in p.parts and "var" not in p.parts]
    return [p for p in files if str(p.relative_to(ROOT)) not in skip]


def test_no_manage_py_command_line_is_written_outside_the_catalog():
    offenders = [
        str(p.relative_to(ROOT))
        for p in python_files("devstack/processes.py", str(Path(__file__).relative_to(ROOT)))
        if MANAGE_ARGV.search(p.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_the_pattern_finds_a_hand_written_manage_py_command_line():
    assert MANAGE_ARGV.search('subprocess.run([sys.executable, "manage.py", "migrate"])')
    assert MANAGE_ARGV.search('argv = ["manage.py", "serve_queue"]')
    assert not MANAGE_ARGV.search('files = ("manage.py", "requirements.txt")')


def test_only_the_supervisor_starts_the_projects_long_running_processes():
    application = [
        p
        for p in python_files("devstack/supervisor.py")
        if p.relative_to(ROOT).parts[0] != "tests" or p.parts[-2] == "support"
    ]
    offenders = [
        str(p.relative_to(ROOT))
        for p in application
        if "subprocess.Popen(" in p.read_text(encoding="utf-8")
    ]
    assert offenders == []
