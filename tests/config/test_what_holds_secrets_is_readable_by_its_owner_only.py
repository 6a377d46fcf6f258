"""What holds secrets is readable by its owner only, however it is created: a fresh
`var/` under the common umask 022 ends 0700 with the SQLite database (tokens, sessions,
password hashes) 0600, a tree left readable by an older version is put right, and the
processes `make run` starts (Redis, whose `ACL SAVE` rewrites users.acl, and manage.py)
create files under umask 077. The owner still reads and writes them all."""

from __future__ import annotations

import os
import re
import socket
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import psutil
import redis

from devstack.supervisor import spawn, stop_group
from launch import process_catalog
from tests.support.processes import ROOT
from tests.support.waiting import eventually

OTHERS = 0o077  # the group's and everyone else's bits


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def under_umask_022(argv: list[str], var: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "VAR_DIR": str(var)}
    environ.pop("DATABASE_URL", None)  # the default: SQLite in VAR_DIR
    return subprocess.run(
        argv, cwd=ROOT, env={**environ, **env}, capture_output=True, text=True, timeout=300,
        preexec_fn=lambda: os.umask(0o022),
    )  # fmt: skip


def test_a_fresh_var_dir_under_umask_022_is_owner_only(tmp_path):
    var = tmp_path / "var"
    migrated = under_umask_022([*process_catalog.migrate().argv(), "-v", "0"], var)
    assert migrated.returncode == 0, migrated.stderr[-2000:]

    assert mode(var) == 0o700 and mode(var / "db.sqlite3") == 0o600
    for path in filter(Path.is_file, var.rglob("*")):  # secret_key, metrics_token, WAL…
        assert mode(path) & OTHERS == 0, f"{path.name} is {oct(mode(path))}"
    with sqlite3.connect(var / "db.sqlite3") as db:  # the owner reads it
        assert db.execute("select count(*) from django_migrations").fetchone()[0] > 10


def test_a_tree_left_readable_is_put_right_at_the_next_start(tmp_path):
    var = tmp_path / "var"
    var.mkdir(mode=0o755)
    var.chmod(0o755)
    (var / "db.sqlite3").touch()
    (var / "db.sqlite3").chmod(0o644)
    (var / "db.sqlite3-wal").touch()
    (var / "db.sqlite3-wal").chmod(0o644)
    started = under_umask_022([sys.executable, "-c", "import django; django.setup()"], var)
    assert started.returncode == 0, started.stderr[-2000:]
    assert mode(var) == 0o700
    assert mode(var / "db.sqlite3") == 0o600 and mode(var / "db.sqlite3-wal") == 0o600


def umask_of(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"^Umask:\s*(\d+)", status, re.M).group(1), 8)


def test_make_runs_processes_create_files_owner_only(tmp_path):
    """The launcher under umask 022, its database a server that never answers, so its
    `manage.py migrate` waits: meanwhile its Redis and migrate are looked at."""
    silent = socket.create_server(("127.0.0.1", 0))  # accepts, never answers
    url = f"postgres://u:p@127.0.0.1:{silent.getsockname()[1]}/stockserve"
    var = tmp_path / "var"
    env = {**os.environ, "VAR_DIR": str(var), "DATABASE_URL": url, "PORT": "1"}
    env.pop("REDIS_URL", None)  # the launcher's own Redis, as `make run` on a fresh machine
    log = open(tmp_path / "launcher.log", "w+b")  # noqa: SIM115 (read while it runs)
    launcher = spawn(process_catalog.stack().argv(), env=env, log=log, die_with_parent=True)
    try:
        said = lambda: (tmp_path / "launcher.log").read_text(errors="replace")  # noqa: E731
        port = int(eventually(lambda: re.search(r"redis-server on 127.0.0.1:(\d+)", said()),
                              60, "the launcher's Redis", 0.1).group(1))  # fmt: skip
        migrate = eventually(
            lambda: next((p for p in psutil.Process(launcher.pid).children(recursive=True)
                          if "migrate" in p.cmdline()), None),
            60, "the launcher's manage.py migrate", 0.1,
        )  # fmt: skip
        server = next(p for p in psutil.process_iter(["name", "cmdline"])
                      if f"127.0.0.1:{port}" in " ".join(p.info["cmdline"] or [])
                      or str(port) in (p.info["cmdline"] or []))  # fmt: skip
        assert umask_of(migrate.pid) == 0o077 and umask_of(server.pid) == 0o077

        password = (var / "redis" / "password").read_text().strip()
        client = redis.Redis(port=port, password=password)
        client.execute_command("ACL", "SETUSER", "queue-acme", "on", ">a-password", "~x:*")
        client.execute_command("ACL", "SAVE")  # Redis rewrites users.acl itself
        acl = var / "redis" / "users.acl"
        assert "queue-acme" in acl.read_text()  # the owner reads it
        assert mode(acl) == 0o600 and mode(var) == 0o700 and mode(var / "redis") == 0o700
        for path in var.rglob("*"):
            assert mode(path) & OTHERS == 0, f"{path.name} is {oct(mode(path))}"
        migrate.terminate()  # the launcher stops its Redis and exits
        assert launcher.wait(timeout=60) != 0
    finally:
        stop_group(launcher, grace=5)
        silent.close()
        log.close()
