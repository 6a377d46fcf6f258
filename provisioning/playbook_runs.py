"""Run one provisioning playbook through ansible-runner and keep its record.

1. `start_run` checks the input (one worker host of the inventory, never a group or a
   pattern) and writes a `queued` row (refusing a second live run on the same host), so a
   bad request leaves a record and never reaches Ansible.
2. `execute` gives the run its own private data dir (docs/architecture.md, rule 14), with
   the playbooks dir as the read-only project. Secrets travel in `env/extravars` (0600);
   Ansible sees only an allow-list of this process's environment (`ansible_env`), with
   host-key checking on; the whole private dir, artifacts included, is deleted when the
   run ends. Secrets are never stored on the row or passed on a command line.
3. Events stream to the console and the row (`RunRecorder`); the outcome, counts and a
   one-sentence error land on the row at the end.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import close_old_connections, transaction
from django.utils import timezone

from provisioning import hosts, inventory
from provisioning.ansible_bin import ensure_ansible_on_path
from provisioning.models import PLAYBOOKS, ProvisioningRun, RunAction, RunStatus
from provisioning.recorder import RunRecorder

PLAYBOOKS_DIR = Path(settings.BASE_DIR) / "playbooks"


@dataclass
class RunOptions:
    """What a run needs besides its row; `extravars` may hold secrets and is never saved."""

    inventories: list[str] = field(default_factory=list)
    extravars: dict[str, Any] = field(default_factory=dict)
    vault_password_file: str | None = None
    job_timeout: int = 3600
    idle_timeout: int = 900
    verbosity: int = 0


def runs_dir() -> Path:
    return Path(settings.VAR_DIR) / "provisioning" / "runs"


def start_run(
    action: str,
    host: str,
    *,
    queues: str | list[str] | None = None,
    concurrency: int | str | None = None,
    requested_by: str = "",
    inventories: list[str] | None = None,
) -> ProvisioningRun:
    """A `queued` row for a valid request; a `failed` row and BadRequest for an invalid one.

    Only a worker host of `inventories` (default: PROVISIONING_INVENTORY) is accepted.
    """
    args: dict[str, Any] = {}
    try:
        if action not in PLAYBOOKS:
            raise hosts.BadRequest(f"Unknown action {action!r}: choose add, remove or status.")
        host = hosts.clean_host(host)
        if action == RunAction.ADD:
            args = {
                "queues": hosts.clean_queues(queues),
                "concurrency": hosts.clean_concurrency(concurrency),
            }
            args = {key: value for key, value in args.items() if value is not None}
        inventory.check_worker_host(host, inventories or inventory.configured_inventories())
    except hosts.BadRequest as exc:
        _record_rejection(action, host, queues, concurrency, requested_by, str(exc))
        raise
    with transaction.atomic():
        busy = ProvisioningRun.objects.active().filter(host=host).first()
        if busy:
            message = f"Run #{busy.pk} ({busy.action}) is still {busy.status} on {host}: wait."
            _record_rejection(action, host, queues, concurrency, requested_by, message)
            raise hosts.BadRequest(message)
        return ProvisioningRun.objects.create(
            action=action,
            playbook=PLAYBOOKS[RunAction(action)],
            host=host,
            args=args,
            requested_by=requested_by,
        )


def _record_rejection(
    action: str, host: str, queues: Any, concurrency: Any, requested_by: str, message: str
) -> None:
    now = timezone.now()
    ProvisioningRun.objects.create(
        action=action if action in PLAYBOOKS else RunAction.STATUS,
        playbook=PLAYBOOKS[RunAction(action)] if action in PLAYBOOKS else "",
        host=(host or "")[:255],
        args={"queues": queues, "concurrency": concurrency},
        requested_by=requested_by,
        status=RunStatus.FAILED,
        started_at=now,
        finished_at=now,
        error=message,
    )


def _extravars(run: ProvisioningRun, options: RunOptions) -> dict[str, Any]:
    extravars = dict(options.extravars)
    if "queues" in run.args:
        extravars["worker_queues"] = run.args["queues"]
    if "concurrency" in run.args:
        extravars["worker_concurrency"] = run.args["concurrency"]
    extravars.setdefault("stockserve_bundle_dir", str(Path(settings.VAR_DIR) / "bundles"))
    return extravars


def _prepare_private_dir(run: ProvisioningRun, options: RunOptions) -> Path:
    runs_dir().mkdir(parents=True, exist_ok=True)
    # Unique even when two processes number their runs alike (parallel test databases).
    private = Path(tempfile.mkdtemp(prefix=f"{run.pk}-", dir=runs_dir()))
    (private / "env").mkdir(mode=0o700)
    # Runner reads its timeouts only from env/settings (a `settings=` dict is dropped when
    # the file is missing), so they go there.
    limits = {"idle_timeout": options.idle_timeout, "job_timeout": options.job_timeout}
    (private / "env" / "settings").write_text(json.dumps(limits), encoding="utf-8")
    extravars = private / "env" / "extravars"
    fd = os.open(extravars, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(_extravars(run, options), f)
    return private


def _remove_orphaned_run_dirs(older_than: float) -> None:
    """Private dirs a killed process left behind (a live run's is younger than its timeout)."""
    cutoff = time.time() - older_than
    for left in runs_dir().iterdir():
        if left.is_dir() and left.stat().st_mtime < cutoff:
            shutil.rmtree(left, ignore_errors=True)


def _envvars() -> dict[str, str]:
    ensure_ansible_on_path()
    return {
        "PATH": os.environ["PATH"],
        "ANSIBLE_CONFIG": str(PLAYBOOKS_DIR / "ansible.cfg"),
        "ANSIBLE_HOST_KEY_CHECKING": "True",  # ansible-runner would turn it off
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_FORCE_COLOR": "0",
        "PYTHONUNBUFFERED": "1",
    }


# What Ansible may see of this process's environment; the web process's own settings
# (SECRET_KEY, DATABASE_URL, REDIS_URL, tokens) are not on it.
ENV_ALLOWED = frozenset({"HOME", "USER", "LOGNAME", "LANG", "TMPDIR", "SSH_AUTH_SOCK", "TERM"})
ENV_ALLOWED_PREFIXES = ("ANSIBLE_", "LC_")


def ansible_env(env: dict[str, Any], own: dict[str, str]) -> dict[str, Any]:
    """The environment ansible-runner built (ours, its own ANSIBLE_/AWX_ settings and a copy
    of this process's), with this process's copy cut down to the allow-list."""
    return {
        key: value
        for key, value in env.items()
        if key in own
        or key in ENV_ALLOWED
        or key.startswith(ENV_ALLOWED_PREFIXES)
        or os.environ.get(key) != value  # set or changed by ansible-runner itself
    }


def execute(
    run: ProvisioningRun, options: RunOptions, echo: Callable[[str], None] | None = None
) -> ProvisioningRun:
    """Run the playbook for a queued row; returns the row with its outcome."""
    import ansible_runner

    claimed = ProvisioningRun.objects.filter(pk=run.pk, status=RunStatus.QUEUED).update(
        status=RunStatus.RUNNING,
        started_at=timezone.now(),
        runner_host=socket.gethostname(),
        runner_pid=os.getpid(),
    )
    if not claimed:
        run.refresh_from_db()
        return run
    recorder = RunRecorder(run, echo)
    private = _prepare_private_dir(run, options)
    cmdline = []
    if options.vault_password_file:
        cmdline += ["--vault-password-file", options.vault_password_file]
    status, rc = "failed", None
    envvars = _envvars()
    try:
        prepared = ansible_runner.interface.init_runner(
            private_data_dir=str(private),
            project_dir=str(PLAYBOOKS_DIR),
            playbook=run.playbook,
            inventory=list(options.inventories),
            limit=run.host,
            cmdline=shlex.join(cmdline) or None,
            envvars=envvars,
            event_handler=recorder.handle,
            quiet=True,
            suppress_env_files=True,
            rotate_artifacts=1,
            verbosity=options.verbosity or None,
        )
        prepared.config.env = ansible_env(prepared.config.env, envvars)
        prepared.run()
        status, rc = prepared.status, prepared.rc
    except Exception as exc:  # noqa: BLE001 - runner itself failed: keep that on the record
        recorder.errors.append(f"ansible-runner could not run the playbook: {exc}")
    finally:
        # Secrets (env/extravars) and artifacts (each event, the command and its
        # environment) go with the run; its log is on the row.
        shutil.rmtree(private, ignore_errors=True)
        _remove_orphaned_run_dirs(older_than=options.job_timeout + 60)
    error = recorder.error_text(status, rc)
    ProvisioningRun.objects.filter(pk=run.pk).update(
        status=RunStatus.FAILED if error else RunStatus.SUCCEEDED,
        finished_at=timezone.now(),
        rc=rc,
        log=recorder.log,
        error=error,
        ok=recorder.total("ok"),
        changed=recorder.total("changed"),
        failed=recorder.total("failures"),
        unreachable=recorder.total("dark"),
    )
    run.refresh_from_db()
    return run


def execute_in_thread(run: ProvisioningRun, options: RunOptions) -> threading.Thread:
    """For the dashboard: the request returns at once and the page polls the row's log."""

    def target() -> None:
        try:
            execute(run, options)
        finally:
            close_old_connections()

    thread = threading.Thread(target=target, name=f"provisioning-run-{run.pk}", daemon=False)
    thread.start()
    return thread
