"""Two test hosts of our own, the broker reachable from them, and a command runner.

The provisioned workers use the suite's own Redis (so the API in this process dispatches
to them) and its SQLite test database (a file both namespaces see). Redis is told to
listen on the first host's gateway address too, only for this module.
"""

from __future__ import annotations

import io
import secrets
import socket
import sys
import sysconfig
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connections

from provisioning.bundle import snapshot
from provisioning.models import ProvisioningRun
from tests.support.processes import ROOT, database_url_for_workers
from tests.support.testhosts import TestNetwork, unavailable_reason
from workers import presence


@dataclass
class Cluster:
    net: TestNetwork
    inventory: Path
    secrets_file: Path
    nodename: str

    def node(self, host: str) -> str:
        return f"{host}@{self.nodename}"

    def workers(self, *args: str) -> tuple[str, ProvisioningRun, CommandError | None]:
        """`manage.py workers ...` against the test inventory: output, its run, its error."""
        out = io.StringIO()
        error = None
        try:
            # The shared secrets first, so a test's own -e wins (later -e override earlier).
            call_command(
                "workers",
                *args[:2],
                "-i",
                str(self.inventory),
                "-e",
                f"@{self.secrets_file}",
                *args[2:],
                stdout=out,
                stderr=out,
            )
        except CommandError as exc:
            error = exc
        run = ProvisioningRun.objects.filter(host=args[1]).order_by("-id").first()
        if threading.current_thread() is not threading.main_thread():
            connections.close_all()
        return out.getvalue() + (str(error) if error else ""), run, error

    def workers_at_once(self, *commands: tuple[str, ...]) -> list[tuple]:
        """Several runs in parallel, as two operators (or the page and the CLI) would."""
        with ThreadPoolExecutor(max_workers=len(commands)) as pool:
            return list(pool.map(lambda command: self.workers(*command), commands))

    def alive(self) -> dict[str, dict]:
        return {w["hostname"]: w for w in presence.alive_workers()}


def _listen_on(address: str) -> tuple[object, str]:
    from plumbing.redis_client import get_redis

    redis = get_redis()
    before = redis.config_get("bind")["bind"]
    redis.config_set("bind", f"{before} {address}")
    redis.config_set("protected-mode", "no")
    return redis, before


def _pause_other_workers(app: object) -> list[tuple[str, str]]:
    """Other live workers (the suite's own) stop consuming while this module runs, so the
    tasks of a prediction can only go to the provisioned workers."""
    paused = []
    for worker in presence.alive_workers():
        for queue in worker.get("queues", []):
            app.control.cancel_consumer(queue, destination=[worker["hostname"]], reply=True)
            paused.append((worker["hostname"], queue))
    return paused


@pytest.fixture(scope="module")
def cluster(django_db_setup: None, django_db_blocker: object) -> Iterator[Cluster]:
    reason = unavailable_reason()
    if reason:
        pytest.fail(f"The provisioning test needs its own test hosts: {reason}.")
    from config.celery_app import app

    with TestNetwork(["host1", "host2"]) as net:
        redis, bind_before = _listen_on(net.broker_address)
        paused = _pause_other_workers(app)
        port = redis.connection_pool.connection_kwargs["port"]
        source = snapshot(ROOT, net.root / "src")
        # Test hosts build their virtualenv from this interpreter and layer this venv's
        # site-packages under it: pip checks every pin for real, installs nothing, no index.
        host_vars = {
            "ansible_python_interpreter": "/usr/bin/python3",
            "stockserve_user": "root",
            "stockserve_create_user": False,
            "stockserve_python": sys._base_executable,
            "common_install_system_packages": False,
            "common_venv_base_site_packages": sysconfig.get_paths()["purelib"],
            "common_pip_extra_args": "--no-index",
        }
        host2 = net.hosts["host2"]
        inventory = net.inventory(
            host_vars,
            extra_hosts={
                # Not listening: SSH is refused at once.
                "host3": {
                    "ansible_host": net.hosts["host1"].address,
                    "ansible_port": 2,
                    "stockserve_prefix": str(net.root / "host3"),
                },
                # A second worker on host2's machine (shares its venv and supervisord).
                "host2b": {"ansible_host": host2.address, "stockserve_prefix": str(host2.prefix)},
            },
        )
        secrets_file = net.root / "secrets.yml"
        secrets_file.write_text(
            yaml.safe_dump(
                {
                    "stockserve_redis_url": f"redis://{net.broker_address}:{port}/0",
                    "stockserve_database_url": database_url_for_workers(),
                    "stockserve_secret_key": secrets.token_urlsafe(40),
                    "stockserve_extra_env": {
                        "PRICE_PROVIDERS": "sample",
                        "MENTION_PROVIDERS": "sample",
                        "TF_CPP_MIN_LOG_LEVEL": "2",
                        # As the suite's own workers (tests/plugin.py): nothing kept from
                        # an earlier test's rows (the workers outlive each test's database)
                        # and no spare task waiting for cores the suite keeps busy.
                        "LOOKUP_CACHE_SECONDS": "0",
                        "SPARE_YIELD_SECONDS": "0",
                    },
                    "stockserve_source_dir": str(source),
                    "stockserve_bundle_dir": str(net.root / "bundles"),
                }
            )
        )
        secrets_file.chmod(0o600)
        try:
            yield Cluster(net, inventory, secrets_file, socket.gethostname())
        finally:
            with django_db_blocker.unblock():
                for host, prefix in (
                    ("host1", net.hosts["host1"].prefix),
                    ("host2", host2.prefix),
                    ("host2b", host2.prefix),
                ):
                    if (prefix / "etc" / f"stockserve-worker-{host}.env").exists():
                        call_command(
                            "workers",
                            "remove",
                            host,
                            "-i",
                            str(inventory),
                            "-e",
                            f"@{secrets_file}",
                            stdout=io.StringIO(),
                        )
            for node, queue in paused:
                app.control.add_consumer(queue, destination=[node], reply=True)
            redis.config_set("bind", bind_before)
            redis.config_set("protected-mode", "yes")
