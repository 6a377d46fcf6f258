"""Run one provisioning playbook through ansible-runner and keep its record.

1. `start_run` checks the input and writes a `queued` row (refusing a second live run on
   the same host), so a bad request leaves a record and never reaches Ansible.
2. `execute` gives the run its own private data dir (PITFALLS #14: shared dirs leak
   `env/cmdline` between runs), with the playbooks dir as the read-only project. Secrets
   travel in `env/extravars` (0600) and that file is deleted when the run ends; they are
   never stored on the row, passed on a command line, or written by runner itself
   (`suppress_env_files`).
3. Events stream to the console and the row (`RunRecorder`); the outcome, counts and a
   one-sentence error land on the row at the end.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import close_old_connections, transaction
from django.utils import timezone

from workers.models import PLAYBOOKS, ProvisioningRun, RunAction, RunStatus
from workers.provisioning import hosts
from workers.provisioning.recorder import RunRecorder

PLAYBOOKS_DIR = Path(settings.BASE_DIR) / "playbooks"
KEEP_RUN_DIRS = 20


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


def start_run(action: str, host: str, *, queues: str | list[str] | None = None,
              concurrency: int | str | None = None, requested_by: str = "") -> ProvisioningRun:
    """A `queued` row for a valid request; a `failed` row and BadRequest for an invalid one."""
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
            action=action, playbook=PLAYBOOKS[action], host=host, args=args,
            requested_by=requested_by,
        )  # fmt: skip


def _record_rejection(action: str, host: str, queues: Any, concurrency: Any,
                      requested_by: str, message: str) -> None:
    now = timezone.now()
    ProvisioningRun.objects.create(
        action=action if action in PLAYBOOKS else RunAction.STATUS,
        playbook=PLAYBOOKS.get(action, ""), host=(host or "")[:255],
        args={"queues": queues, "concurrency": concurrency}, requested_by=requested_by,
        status=RunStatus.FAILED, started_at=now, finished_at=now, error=message,
    )  # fmt: skip


def _target_inventory(run: ProvisioningRun) -> dict[str, Any]:
    """The host in the right group, so a host missing from the inventory can still be added."""
    queues = run.args.get("queues")
    group = "workers_gpu" if hosts.wants_gpu(queues) else "workers_cpu"
    if run.action != RunAction.ADD:
        group = "workers"
    return {"all": {"children": {group: {"hosts": {run.host: {}}}}}}


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
    (private / "inventory").mkdir(mode=0o700)
    target = private / "inventory" / "target.json"
    target.write_text(json.dumps(_target_inventory(run)), encoding="utf-8")
    # Runner reads its timeouts only from env/settings (a `settings=` dict is dropped when
    # the file is missing), so they go there.
    limits = {"idle_timeout": options.idle_timeout, "job_timeout": options.job_timeout}
    (private / "env" / "settings").write_text(json.dumps(limits), encoding="utf-8")
    extravars = private / "env" / "extravars"
    fd = os.open(extravars, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(_extravars(run, options), f)
    return private


def _prune_old_run_dirs() -> None:
    dirs = sorted((p for p in runs_dir().iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime)
    for old in dirs[:-KEEP_RUN_DIRS]:
        shutil.rmtree(old, ignore_errors=True)


def ensure_ansible_on_path() -> None:
    """ansible-runner looks its executables up on PATH; ours sit beside this interpreter."""
    venv_bin = str(Path(sys.executable).parent)
    path = os.environ.get("PATH", "/usr/bin:/bin")
    if venv_bin not in path.split(os.pathsep):
        os.environ["PATH"] = f"{venv_bin}{os.pathsep}{path}"


def _envvars() -> dict[str, str]:
    ensure_ansible_on_path()
    return {
        "PATH": os.environ["PATH"],
        "ANSIBLE_CONFIG": str(PLAYBOOKS_DIR / "ansible.cfg"),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_FORCE_COLOR": "0",
        "PYTHONUNBUFFERED": "1",
    }


def execute(run: ProvisioningRun, options: RunOptions,
            echo: Callable[[str], None] | None = None) -> ProvisioningRun:
    """Run the playbook for a queued row; returns the row with its outcome."""
    import ansible_runner

    claimed = ProvisioningRun.objects.filter(pk=run.pk, status=RunStatus.QUEUED).update(
        status=RunStatus.RUNNING, started_at=timezone.now(),
        runner_host=socket.gethostname(), runner_pid=os.getpid(),
    )  # fmt: skip
    if not claimed:
        run.refresh_from_db()
        return run
    recorder = RunRecorder(run, echo)
    private = _prepare_private_dir(run, options)
    cmdline = []
    if options.vault_password_file:
        cmdline += ["--vault-password-file", options.vault_password_file]
    status, rc = "failed", None
    try:
        result = ansible_runner.run(
            private_data_dir=str(private),
            project_dir=str(PLAYBOOKS_DIR),
            playbook=run.playbook,
            inventory=[*options.inventories, str(private / "inventory" / "target.json")],
            limit=run.host,
            cmdline=shlex.join(cmdline) or None,
            envvars=_envvars(),
            event_handler=recorder.handle,
            quiet=True,
            suppress_env_files=True,
            rotate_artifacts=1,
            verbosity=options.verbosity or None,
        )
        status, rc = result.status, result.rc
    except Exception as exc:  # noqa: BLE001 - runner itself failed: keep that on the record
        recorder.errors.append(f"ansible-runner could not run the playbook: {exc}")
    finally:
        shutil.rmtree(private / "env", ignore_errors=True)
        _prune_old_run_dirs()
    error = recorder.error_text(status, rc)
    ProvisioningRun.objects.filter(pk=run.pk).update(
        status=RunStatus.FAILED if error else RunStatus.SUCCEEDED,
        finished_at=timezone.now(), rc=rc, log=recorder.log, error=error,
        ok=recorder.total("ok"), changed=recorder.total("changed"),
        failed=recorder.total("failures"), unreachable=recorder.total("dark"),
    )  # fmt: skip
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
