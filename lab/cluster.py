"""The cluster `make -C lab cluster-bench` measures: worker hosts as network namespaces, shared
PostgreSQL and Redis, one web tier, each host's processes confined to a slice of the
machine.

Why namespaces and real provisioning: a worker host is what `manage.py workers add`
makes through the playbooks, so the benchmark adds hosts the way an operator does, and
the hosts reach the shared services over their own links (devstack.testhosts). Why
confinement (`Quota`): on one machine nothing else keeps two "hosts" from sharing every
core. Each host's processes run in a CPU cgroup of their own with a quota of a fraction of
a core (lab.cpu_quota), so k small hosts leave the rest of the machine to the shared
parts, and the group's own counter says what the host used, exited processes included.
(Pinning a host to a core with `taskset`, `--isolation pinned`, was cut to keep the lab in
its budget: lab/README.md.)

What a host's worker forks later inherits its group. The web tier, Redis, PostgreSQL and
the load generator are confined to nothing: they share the rest of the machine.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis
import yaml

from devstack.postgres import ThrowawayPostgres
from devstack.redis import EmbeddedRedis
from devstack.supervisor import Supervisor
from devstack.testhosts import NETWORK, TestHost, TestNetwork, namespace_pids
from lab.cpu import cpu_seconds, descendants, machine_busy_seconds, process_name
from lab.cpu_quota import Layout, QuotaGroup, QuotaSlices, Throttling
from launch import process_catalog
from loadtests.deployment import ROOT, TRAIN_WHEN_COLD, Setup, base_env, migrate, start_web
from provisioning.bundle import snapshot

QUEUES = "io,cpu,scoring"
IN_FLIGHT_KEY = "stockserve:inflight"  # predictions.admission.IN_FLIGHT_KEY (no Django here)
# The web tier's settings (the workers take REGISTRY_SHADOW through the playbook). One
# client sends every arrival: admission control would refuse beyond one client's share of a
# bound sized by the pool, and the run would measure that instead of the hosts.
CLUSTER_ENV = {
    **TRAIN_WHEN_COLD,
    "ADMISSION_MAX_IN_FLIGHT": "1000",
    "ADMISSION_CLIENT_SHARE": "1",
    "PREDICTION_MAX_WAITERS": "1000",  # every arrival long-polls `?wait=` at once
}


@dataclass
class Quota:
    """Each host in a CPU cgroup of its own with `cores` of a core per `period_us`; its CPU
    time and throttling read from the group."""

    layout: Layout
    cores: float
    period_us: int
    slices: QuotaSlices = field(init=False)

    def __post_init__(self) -> None:
        self.slices = QuotaSlices(self.layout)

    def group(self, host: str) -> QuotaGroup:
        """The host's group, made the first time it is asked for."""
        if host not in self.slices.groups:
            return self.slices.add(host, self.cores, self.period_us)
        return self.slices.groups[host]

    def confine(self, host: str, pid: int) -> None:
        self.group(host).add(pid)

    def strays(self, host: str, pids: Iterable[int]) -> list[int]:
        inside = self.group(host).pids()
        return [pid for pid in pids if pid not in inside and os.path.exists(f"/proc/{pid}")]

    def cpu_seconds(self, host: str, pids: list[int]) -> float:
        return self.group(host).usage_seconds()

    def throttling(self, host: str) -> Throttling | None:
        return self.group(host).throttling()

    def describe(self, host: str) -> dict[str, Any]:
        group = self.group(host)
        return {
            "isolation": "quota",
            "cores": self.cores,
            "period_us": self.period_us,
            "quota_us": group.quota_us,
            "cgroup_version": self.layout.version,
            "cgroups": [str(directory) for directory in group.directories()],
        }

    def close(self) -> list[str]:
        return self.slices.close()


def throttling_between(
    before: dict[str, Throttling | None], after: dict[str, Throttling | None], seconds: float
) -> dict[str, dict[str, float]]:
    """Each quota host's throttling during a step: the share of its periods in which it ran
    out of quota, and the seconds per second its processes waited for the next period."""
    found = {}
    for host, end in after.items():
        start = before.get(host)
        if end is None or start is None:
            continue
        periods = end.periods - start.periods
        throttled = end.throttled - start.throttled
        found[host] = {
            "throttled_periods": round(throttled / periods, 3) if periods else 0.0,
            "waited_s_per_s": round((end.throttled_s - start.throttled_s) / seconds, 3),
        }
    return found


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
        isolation: Quota,
        worker_loglevel: str = "WARNING",
    ) -> None:
        self.workdir, self.models, self.say = workdir, models, say
        self.isolation = isolation
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

    def add_host(self, name: str, timeout_s: float = 600) -> dict[int, str]:
        """`manage.py workers add` through the playbooks, then every process in the host's
        namespace confined to the host's share; returns what runs there, checked."""
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
        self._confine_namespace(host)
        return self.check_confined(host)

    def _confine_namespace(self, host: TestHost, passes: int = 5) -> None:
        """Move what runs in the namespace into the host's share, pass after pass: a parent
        moved after it forked leaves its child for the next pass."""
        for _ in range(passes):
            strays = self.isolation.strays(host.name, namespace_pids(host.netns))
            if not strays:
                return
            for pid in strays:
                self.isolation.confine(host.name, pid)

    def check_confined(self, host: TestHost) -> dict[int, str]:
        """What runs in the host's namespace; raises if any of it is outside its share."""
        pids = namespace_pids(host.netns)
        if strays := self.isolation.strays(host.name, pids):
            where = self.isolation.describe(host.name)
            raise RuntimeError(f"{host.name}: pids {strays} are outside its share {where}")
        return {pid: process_name(pid) for pid in pids}

    def cpu(self) -> dict[str, float]:
        """CPU seconds so far of each host's namespace, of the shared services (web, Redis,
        PostgreSQL), of this process (the load generator) and of the whole machine: the
        machine is shared, and what none of these used is someone else's."""
        assert self.redis is not None and self.redis.process is not None
        assert self.postgres is not None
        postmaster = int((self.postgres.data / "postmaster.pid").read_text().split()[0])
        roots = [c.proc.pid for c in self.sup.children.values() if c.proc is not None]
        used = {
            host.name: self.isolation.cpu_seconds(host.name, namespace_pids(host.netns))
            for host in self.added
        }
        used["services"] = cpu_seconds(descendants([*roots, self.redis.process.pid, postmaster]))
        mine = os.times()
        used["load generator"] = mine.user + mine.system
        used["machine"] = machine_busy_seconds()
        return used

    def throttling(self) -> dict[str, Throttling | None]:
        """Each host's throttling counters so far (None: a host with no quota)."""
        return {host.name: self.isolation.throttling(host.name) for host in self.added}

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

    def close(self) -> None:
        """Hosts first (their workers), their CPU shares, then web, PostgreSQL and Redis;
        each step runs even when an earlier one failed."""
        for stop in (
            self.net.close,
            self._release_isolation,
            self.sup.stop,
            self.postgres.stop if self.postgres else None,
            self.redis.stop if self.redis else None,
        ):
            if stop is not None:
                try:
                    stop()
                except Exception as exc:  # noqa: BLE001 - the next ones must still run
                    self.say(f"teardown: {stop.__qualname__} failed: {exc}")

    def _release_isolation(self) -> None:
        for problem in self.isolation.close():
            self.say(f"teardown: {problem}")
