"""Test hosts of our own: network namespaces with their own addresses, each with an sshd.

Each host is a namespace joined to the root namespace by a veth pair (/30), with a default
route back, and an sshd on its address with a throwaway host key and an authorized key
made here. Ansible reaches them over real SSH, checking the host keys. The namespaces share
the filesystem, so each host gets its own prefix. Everything is torn down at the end,
including processes the playbooks left inside.

Why here: the provisioning tests and `make -C lab cluster-bench` both provision real workers onto
such hosts; sshd is started through the supervisor like every other long-running process.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from devstack.supervisor import signal_pids, spawn, stop_group

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
NETWORK = "10.231.0.0/16"  # every test subnet is a /24 inside it


def _ip(*args: str, netns: str | None = None, check: bool = True) -> str:
    cmd = ["ip", *args] if netns is None else ["ip", "netns", "exec", netns, "ip", *args]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if check and out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {out.stderr.strip()}")
    return out.stdout


def unavailable_reason() -> str | None:
    """Why namespaces with sshd cannot be made here, or None when they can."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if not os.path.exists(SSHD):
        return "sshd is missing: run `make packages` (Debian's openssh-server)"
    if not shutil.which("ip"):
        return "iproute2 (`ip`) is missing"
    return None


def _free_subnet() -> int:
    used = _ip("-o", "-4", "addr")
    start = os.getpid() % 200
    for offset in range(200):
        third = 20 + (start + offset) % 200
        if f" 10.231.{third}." not in used:
            return third
    raise RuntimeError("no free 10.231.x.0/24 test subnet")


def namespace_pids(netns: str) -> list[int]:
    """Every process inside a namespace (sshd, and whatever the playbooks started)."""
    return [int(pid) for pid in _ip("netns", "pids", netns, check=False).split()]


@dataclass
class TestHost:
    name: str
    netns: str
    address: str
    gateway: str  # the root namespace's end of the link: where the host reaches services
    prefix: Path
    sshd: subprocess.Popen[bytes] | None = None


@dataclass
class TestNetwork:
    """`with TestNetwork(["host1", "host2"]) as net:` ... `net.inventory` is an inventory file."""

    names: list[str]
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="ssprov-")))
    hosts: dict[str, TestHost] = field(default_factory=dict)

    def __enter__(self) -> TestNetwork:
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def key(self) -> Path:
        return self.root / "id_ed25519"

    @property
    def known_hosts(self) -> Path:
        return self.root / "known_hosts"

    @property
    def broker_address(self) -> str:
        return next(iter(self.hosts.values())).gateway

    @property
    def gateways(self) -> tuple[str, ...]:
        return tuple(host.gateway for host in self.hosts.values())

    def _start(self) -> None:
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.key)], check=True
        )
        (self.root / "authorized_keys").write_text(Path(f"{self.key}.pub").read_text())
        Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege separation directory
        third = _free_subnet()
        tag = f"{os.getpid() % 100000}"
        known = []
        for index, name in enumerate(self.names):
            base = 4 * index
            host = TestHost(
                name=name,
                netns=f"ssprov-{tag}-{index}",
                address=f"10.231.{third}.{base + 2}",
                gateway=f"10.231.{third}.{base + 1}",
                prefix=self.root / name,
            )
            self.hosts[name] = host
            outside, inside = f"ssp{tag}o{index}", f"ssp{tag}i{index}"
            _ip("netns", "add", host.netns)
            _ip("link", "add", outside, "type", "veth", "peer", "name", inside)
            _ip("link", "set", inside, "netns", host.netns)
            _ip("addr", "add", f"{host.gateway}/30", "dev", outside)
            _ip("link", "set", outside, "up")
            _ip("addr", "add", f"{host.address}/30", "dev", inside, netns=host.netns)
            _ip("link", "set", inside, "up", netns=host.netns)
            _ip("link", "set", "lo", "up", netns=host.netns)
            _ip("route", "add", "default", "via", host.gateway, netns=host.netns)
            known.append(self._start_sshd(host))
        self.known_hosts.write_text("".join(known))

    def _start_sshd(self, host: TestHost) -> str:
        hostkey = self.root / f"{host.name}_host_key"
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(hostkey)], check=True
        )
        config = self.root / f"{host.name}_sshd_config"
        config.write_text(
            f"ListenAddress {host.address}\nPort 22\nHostKey {hostkey}\n"
            f"PidFile {self.root / host.name}_sshd.pid\n"
            f"AuthorizedKeysFile {self.root / 'authorized_keys'}\n"
            "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
            "MaxStartups 50\nMaxSessions 50\nSubsystem sftp internal-sftp\n"
        )
        log = self.root / f"{host.name}_sshd.log"
        with open(log, "wb") as out:
            host.sshd = spawn(
                ["ip", "netns", "exec", host.netns, SSHD, "-D", "-e", "-f", str(config)],
                cwd=self.root,
                log=out,
                die_with_parent=True,
            )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if host.sshd.poll() is not None:
                raise RuntimeError(f"sshd for {host.name} exited: {log.read_text()}")
            try:
                with socket.create_connection((host.address, 22), timeout=0.5) as conn:
                    if conn.recv(64).startswith(b"SSH-"):
                        break
            except OSError:
                time.sleep(0.1)
        else:
            raise RuntimeError(f"sshd for {host.name} did not answer on {host.address}:22")
        public = Path(f"{hostkey}.pub").read_text().split()
        return f"{host.address} {public[0]} {public[1]}\n"

    def inventory(
        self,
        host_vars: dict[str, object],
        extra_hosts: dict[str, dict] | None = None,
        own_vars: dict[str, dict[str, object]] | None = None,
    ) -> Path:
        """An inventory with every host in `workers_cpu`; the vars are host vars (they win
        over the playbooks' group_vars, as an operator's host_vars would). `own_vars` adds
        vars to one host each (by name)."""
        hosts: dict[str, dict[str, object]] = {}
        for host in self.hosts.values():
            hosts[host.name] = {
                "ansible_host": host.address,
                "ansible_user": "root",
                "ansible_ssh_private_key_file": str(self.key),
                "ansible_ssh_common_args": (
                    f"-o UserKnownHostsFile={self.known_hosts} -o StrictHostKeyChecking=yes"
                ),
                "stockserve_prefix": str(host.prefix),
                **host_vars,
                **(own_vars or {}).get(host.name, {}),
            }
        for name, extra in (extra_hosts or {}).items():
            hosts[name] = {**next(iter(hosts.values())), **extra}
        data = {"all": {"children": {"workers": {"children": {"workers_cpu": {"hosts": hosts}}}}}}
        path = self.root / "inventory.yml"
        path.write_text(yaml.safe_dump(data))
        return path

    def close(self) -> None:
        """Stop what was started: processes left in each namespace, sshd, the links."""
        for host in self.hosts.values():
            signal_pids(namespace_pids(host.netns))  # KILL: what is left in it
            if host.sshd is not None:
                stop_group(host.sshd, grace=10)
            _ip("netns", "del", host.netns, check=False)
        shutil.rmtree(self.root, ignore_errors=True)
