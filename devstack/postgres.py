"""A throwaway PostgreSQL cluster for the test suite, started the way the project starts
its own Redis: so a fresh machine needs nothing running to test the database every
multi-machine deployment uses.

`initdb` into a temporary directory (trust authentication, loopback only, a free port, the
socket in that directory too), `pg_ctl start`, and at the end `pg_ctl stop` and the
directory removed. PostgreSQL refuses to run as root, so as root the cluster belongs to
the `postgres` user Debian's package creates. `make test` installs the package
(`make packages`) when no `initdb` is found.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from devstack.redis import free_port

USER = "postgres"


def server_bin() -> Path:
    """The newest installed server's bin directory (Debian keeps them per major version)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_major)
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("initdb")
    if on_path:
        return Path(on_path).parent
    raise FileNotFoundError(
        "No PostgreSQL server found: run `make packages` (Debian's postgresql)."
    )


def _major(path: str) -> int:
    version = Path(path).parent.parent.name
    return int(version) if version.isdigit() else 0


class ThrowawayPostgres:
    """`listen` adds addresses beyond loopback (trusted from `trusted_network`, for test
    hosts in network namespaces); `settings` adds server settings (`-c name=value`)."""

    def __init__(
        self,
        *,
        listen: tuple[str, ...] = (),
        trusted_network: str = "",
        settings: dict[str, str] | None = None,
    ) -> None:
        self.port = free_port()
        self.listen = listen
        self.trusted_network = trusted_network
        self.settings = settings or {}
        self.bin = server_bin()
        self.dir = Path(tempfile.mkdtemp(prefix="stockserve-postgres-"))
        self.data = self.dir / "data"
        self.started = False

    @property
    def url(self) -> str:
        return self.url_of("stockserve")

    def url_of(self, database: str) -> str:
        """The URL of another database on this server (`postgres`, or one made later)."""
        return f"postgres://{USER}@127.0.0.1:{self.port}/{database}"

    def _run(self, *argv: str) -> None:
        prefix = ["runuser", "-u", USER, "--"] if os.geteuid() == 0 else []
        subprocess.run([*prefix, *argv], check=True, capture_output=True, text=True)

    def start(self) -> ThrowawayPostgres:
        if os.geteuid() == 0:
            shutil.chown(self.dir, user=USER)
            self.dir.chmod(0o700)
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-U", USER, "-A", "trust")
        if self.trusted_network:
            with open(self.data / "pg_hba.conf", "a") as hba:
                hba.write(f"host all all {self.trusted_network} trust\n")
        addresses = ",".join(("127.0.0.1", *self.listen))
        options = (
            f"-p {self.port} -k {self.dir} -c listen_addresses={addresses} -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        ) + "".join(f" -c {name}={value}" for name, value in self.settings.items())
        log = self.dir / "postgres.log"
        self._run(
            str(self.bin / "pg_ctl"),
            "-D",
            str(self.data),
            "-o",
            options,
            "-l",
            str(log),
            "-w",
            "start",
        )
        self.started = True
        self._run(
            str(self.bin / "createdb"),
            "-h",
            "127.0.0.1",
            "-p",
            str(self.port),
            "-U",
            USER,
            "stockserve",
        )
        return self

    def stop(self) -> None:
        if self.started:
            self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")
            self.started = False
        shutil.rmtree(self.dir, ignore_errors=True)
