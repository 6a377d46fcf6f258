"""The cluster `make cluster-bench` measures: worker hosts as network namespaces, shared
PostgreSQL and Redis, one web tier, each host's processes confined to their own core.

Why namespaces and real provisioning: a worker host is what `manage.py workers add`
makes through the playbooks, so the benchmark adds hosts the way an operator does, and
the hosts reach the shared services over their own links (devstack.testhosts). Why
pinning: on one machine nothing else keeps two "hosts" from sharing every core; `taskset`
gives host i core i, and what its worker forks later inherits that. The web tier, Redis,
PostgreSQL and the load generator stay unpinned: they share the cores with the hosts.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path

import redis
import yaml

from devstack.postgres import ThrowawayPostgres
from devstack.redis import EmbeddedRedis
from devstack.supervisor import Supervisor
from devstack.testhosts import NETWORK, TestHost, TestNetwork, namespace_pids
from launch import process_catalog
from loadtests.cpu import cpu_seconds, descendants, machine_busy_seconds, process_name
from loadtests.deployment import ROOT, TRAIN_WHEN_COLD, Setup, base_env, migrate, start_web
from provisioning.bundle import snapshot

QUEUES = "io,cpu,scoring"
IN_FLIGHT_KEY = "stockserve:inflight"  # serving.admission.IN_FLIGHT_KEY (no Django here)
# The web tier's settings (the workers take REGISTRY_SHADOW through the playbook). One
# client sends every arrival: admission control would refuse beyond one client's share of a
# bound sized by the pool, and the run would measure that instead of the hosts.
CLUSTER_ENV = {
    **TRAIN_WHEN_COLD,
    "ADMISSION_MAX_IN_FLIGHT": "1000",
    "ADMISSION_CLIENT_SHARE": "1",
    "PREDICTION_MAX_WAITERS": "1000",  # every arrival long-polls `?wait=` at once
}


def pin_argv(core: int, pid: int) -> list[str]:
    """Confine every thread of `pid` to one core (its children forked later inherit it)."""
    return ["taskset", "-a", "-cp", str(core), str(pid)]


def cores_used(
    before: dict[str, float], after: dict[str, float], seconds: float
) -> dict[str, float]:
    """Cores each part kept busy on average; `others`: the rest of the machine's use."""
    used = {name: (after[name] - before[name]) / seconds for name in after}
    machine = used.pop("machine")
    return {**used, "others": max(0.0, machine - sum(used.values())), "machine": machine}


class Cluster:
    """Start with `start()`, add hosts with `add_host()`, always end with `close()`."""

    def __init__(
        self,
        workdir: Path,
        models: tuple[str, ...],
        names: list[str],
        say: Callable[[str], None],
        worker_loglevel: str = "WARNING",
    ) -> None:
        self.workdir, self.models, self.say = workdir, models, say
        self.worker_loglevel = worker_loglevel  # INFO: a line per task received and done
        self.sup = Supervisor(restart=False, pid_log=workdir / "pids.log", grace_s=10)
        self.net = TestNetwork(names, root=workdir / "hosts")
        self.postgres: ThrowawayPostgres | None = None
        self.redis: EmbeddedRedis | None = None
        self.env: dict[str, str] = {}
        self.base_url = ""
        self.inventory = self.secrets = Path()
        self.added: list[TestHost] = []

    def start(self) -> None:
        """Hosts (no worker yet), Redis and PostgreSQL on their gateways, the migrated
        database, the web tier on loopback."""
        self.net.root.mkdir(parents=True)
        self.net.__enter__()
        self.redis = EmbeddedRedis(workdir=str(self.workdir / "redis")).start()
        client = redis.Redis(port=self.redis.port)
        client.config_set("bind", " ".join(("127.0.0.1", *self.net.gateways)))
        client.config_set("protected-mode", "no")  # no password: the hosts are ours
        self.postgres = ThrowawayPostgres(listen=self.net.gateways, trusted_network=NETWORK)
        self.postgres.start()
        setup = Setup(workers=0, models=self.models, extra_env=CLUSTER_ENV)
        self.env = base_env(self.workdir / "var", self.redis.url, setup)
        self.env["DATABASE_URL"] = self.postgres.url
        self.say("migrating PostgreSQL")
        migrate(self.workdir / "var", self.postgres.url)
        self.base_url, _ = start_web(self.sup, self.env, self.workdir / "logs" / "web.log")
        self._write_inventory()

    def _write_inventory(self) -> None:
        """Each host reaches Redis and PostgreSQL on its own gateway; the hosts build their
        virtualenv from this interpreter over this venv's site-packages (no index)."""
        assert self.redis is not None and self.postgres is not None
        host_vars: dict[str, object] = {
            "ansible_python_interpreter": "/usr/bin/python3",
            "stockserve_user": "root",
            "stockserve_create_user": False,
            "stockserve_python": sys._base_executable,  # type: ignore[attr-defined]
            "common_install_system_packages": False,
            "common_venv_base_site_packages": sysconfig.get_paths()["purelib"],
            "common_pip_extra_args": "--no-index",
            "worker_gpu": "off",
            "worker_loglevel": self.worker_loglevel,
        }
        own: dict[str, dict[str, object]] = {
            host.name: {
                "stockserve_redis_url": f"redis://{host.gateway}:{self.redis.port}/0",
                "stockserve_database_url": (
                    f"postgres://postgres@{host.gateway}:{self.postgres.port}/stockserve"
                ),
            }
            for host in self.net.hosts.values()
        }
        self.inventory = self.net.inventory(host_vars, own_vars=own)
        source = snapshot(ROOT, self.workdir / "src")
        worker_env = {k: self.env[k] for k in ("PRICE_PROVIDERS", "MENTION_PROVIDERS",
                      "PREDICTION_MODELS", "DEFAULT_STRATEGY", "PREDICTION_TIMEOUT",
                      "PRECOMPUTE_SYMBOLS", "LOG_LEVEL", "TF_CPP_MIN_LOG_LEVEL",
                      "REGISTRY_SHADOW")}  # fmt: skip
        self.secrets = self.workdir / "secrets.yml"
        self.secrets.touch(mode=0o600)
        self.secrets.write_text(
            yaml.safe_dump(
                {
                    "stockserve_secret_key": secrets.token_urlsafe(40),
                    "stockserve_extra_env": worker_env,
                    "stockserve_source_dir": str(source),
                    "stockserve_bundle_dir": str(self.workdir / "bundles"),
                }
            )
        )

    def add_host(self, name: str, core: int, timeout_s: float = 600) -> dict[int, str]:
        """`manage.py workers add` through the playbooks, then every process in the host's
        namespace pinned to `core`; returns what runs there, checked to be on that core."""
        argv = process_catalog.manage(
            "workers",
            "add",
            name,
            "-i",
            self.inventory,
            "-e",
            f"@{self.secrets}",
            "--queues",
            QUEUES,
            "--concurrency",
            1,
        )
        log = self.workdir / "logs" / f"provision-{name}.log"
        proc = self.sup.add(f"provision-{name}", argv.argv(), env=self.env, log_path=log,
                              cwd=ROOT)  # fmt: skip
        try:
            code = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            code = None
        self.sup.stop(proc)
        if code != 0:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-25:])
            raise RuntimeError(f"provisioning {name} failed ({code}):\n{tail}")
        host = self.net.hosts[name]
        self.added.append(host)
        for _ in range(3):  # again for a child forked by a parent not pinned yet
            for pid in namespace_pids(host.netns):
                subprocess.run(pin_argv(core, pid), capture_output=True)  # gone ones fail
        return self.check_pinned(host, core)

    def check_pinned(self, host: TestHost, core: int) -> dict[int, str]:
        """What runs in the host's namespace; raises if any of it may leave `core`."""
        found = {}
        for pid in namespace_pids(host.netns):
            try:
                cores = os.sched_getaffinity(pid)
            except ProcessLookupError:
                continue
            if cores != {core}:
                raise RuntimeError(f"{host.name}: pid {pid} may run on cores {sorted(cores)}")
            found[pid] = process_name(pid)
        return found

    def cpu(self) -> dict[str, float]:
        """CPU seconds so far of each host's namespace, of the shared services (web, Redis,
        PostgreSQL), of this process (the load generator) and of the whole machine: the
        machine is shared, and what none of these used is someone else's."""
        assert self.redis is not None and self.redis.process is not None
        assert self.postgres is not None
        postmaster = int((self.postgres.data / "postmaster.pid").read_text().split()[0])
        roots = [c.proc.pid for c in self.sup.children.values() if c.proc is not None]
        used = {host.name: cpu_seconds(namespace_pids(host.netns)) for host in self.added}
        used["services"] = cpu_seconds(descendants([*roots, self.redis.process.pid, postmaster]))
        mine = os.times()
        used["load generator"] = mine.user + mine.system
        used["machine"] = machine_busy_seconds()
        return used

    @property
    def database_url(self) -> str:
        assert self.postgres is not None
        return self.postgres.url

    def in_flight(self) -> int:
        """Pipelines admitted and not finished (the admission set's live members)."""
        assert self.redis is not None
        client = redis.Redis(port=self.redis.port, socket_timeout=5)
        return int(client.zcount(IN_FLIGHT_KEY, time.time(), "+inf"))

    def settle(self, timeout_s: float) -> int:
        """Wait until no pipeline is in flight (a previous load's backlog has drained);
        returns how many still were when the time ran out."""
        deadline = time.monotonic() + timeout_s
        while (left := self.in_flight()) and time.monotonic() < deadline:
            self.sup.check()
            time.sleep(0.5)
        return left

    def keep_logs(self, into: Path) -> None:
        """The web tier's, the provisioning runs' and every host's worker logs, copied."""
        into.mkdir(parents=True, exist_ok=True)
        for log in [*(self.workdir / "logs").glob("*.log"),
                    *(self.workdir / "hosts").glob("*/log/*.log")]:  # fmt: skip
            shutil.copy(log, into / log.name)

    def close(self) -> None:
        """Hosts first (their workers), then web, PostgreSQL and Redis; each step runs even
        when an earlier one failed."""
        for stop in (
            self.net.close,
            self.sup.stop,
            self.postgres.stop if self.postgres else None,
            self.redis.stop if self.redis else None,
        ):
            if stop is not None:
                try:
                    stop()
                except Exception as exc:  # noqa: BLE001 - the next ones must still run
                    self.say(f"teardown: {stop.__qualname__} failed: {exc}")
