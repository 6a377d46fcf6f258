"""Add, remove and list worker machines with the Ansible playbooks in playbooks/.

    python manage.py workers add HOST --queues cpu,gpu --concurrency 2
    python manage.py workers remove HOST
    python manage.py workers status HOST
    python manage.py workers list [--json]

Each run streams Ansible's output here and is kept (log and outcome) as a ProvisioningRun.
Secrets reach Ansible through `-e @file` / `-e KEY=VALUE` or a vault, never this command's
arguments on the record.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from plumbing.redis_required import require_redis
from provisioning import hosts, inventory, playbook_runs
from provisioning.models import RunStatus


def _parse_extravars(items: list[str]) -> dict[str, Any]:
    """`-e KEY=VALUE` (value parsed as JSON when it can be) or `-e @file.json|yml`."""
    extravars: dict[str, Any] = {}
    for item in items:
        if item.startswith("@"):
            import yaml

            try:
                with open(item[1:], encoding="utf-8") as f:
                    loaded = yaml.safe_load(f) or {}
            except OSError as exc:
                raise CommandError(f"Cannot read extra vars file {item[1:]}: {exc}") from exc
            if not isinstance(loaded, dict):
                raise CommandError(f"{item[1:]} must hold a mapping of variables.")
            extravars.update(loaded)
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise CommandError(f"-e takes KEY=VALUE or @FILE, got {item!r}.")
        try:
            extravars[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            extravars[key.strip()] = value
    return extravars


class Command(BaseCommand):
    help = "Provision worker machines with Ansible: add, remove, status, list."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        add = sub.add_parser("add", help="install and start the worker of HOST")
        add.add_argument(
            "--queues", help="comma-separated: io, cpu, gpu, scoring (default: its group's)"
        )
        add.add_argument("--concurrency", help="pool processes (default: its group's)")
        remove = sub.add_parser("remove", help="drain, stop and remove the worker of HOST")
        status = sub.add_parser("status", help="ask HOST what runs there")
        for p in (add, remove, status):
            p.add_argument("host")
            p.add_argument(
                "-i",
                "--inventory",
                action="append",
                default=None,
                help="inventory path (repeatable; default PROVISIONING_INVENTORY)",
            )
            p.add_argument(
                "-e",
                "--extra-vars",
                action="append",
                default=[],
                help="KEY=VALUE or @FILE (secrets go here or in a vault)",
            )
            p.add_argument("--vault-password-file")
            p.add_argument("-v", "--verbose", action="count", default=0)
        listing = sub.add_parser("list", help="workers known to Ansible and alive in Celery")
        listing.add_argument("-i", "--inventory", action="append", default=None)
        listing.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        require_redis()
        if options["action"] == "list":
            self._list(options)
            return
        extravars = _parse_extravars(options["extra_vars"])
        inventories = options["inventory"] or inventory.configured_inventories()
        try:
            run = playbook_runs.start_run(
                options["action"],
                options["host"],
                queues=options.get("queues"),
                concurrency=options.get("concurrency"),
                requested_by="cli",
                inventories=inventories,
            )
        except hosts.BadRequest as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"Run #{run.pk}: {run.playbook} on {run.host}")
        opts = playbook_runs.RunOptions(
            inventories=inventories,
            extravars=extravars,
            vault_password_file=options["vault_password_file"],
            verbosity=options["verbose"],
        )
        run = playbook_runs.execute(run, opts, echo=self._echo)
        if run.status != RunStatus.SUCCEEDED:
            raise CommandError(run.summary())
        self.stdout.write(self.style.SUCCESS(run.summary()))

    def _echo(self, text: str) -> None:
        self.stdout.write(text)
        self.stdout.flush()

    def _list(self, options: dict[str, Any]) -> None:
        state = inventory.side_by_side(options["inventory"])
        if options["json"]:
            self.stdout.write(json.dumps(state, indent=2, default=str))
            return
        if state["inventory_error"]:
            self.stderr.write(state["inventory_error"])
        header = f"{'host':<28} {'ansible':<26} {'celery':<44} last run"
        self.stdout.write(header)
        for row in state["hosts"]:
            self.stdout.write(_row_line(row))
        for worker in state["other_workers"]:
            unknown = "(not from Ansible)"
            self.stdout.write(f"{'-':<28} {unknown:<26} {_alive(worker):<44}")


def _row_line(row: dict[str, Any]) -> str:
    if row["provisioned"]:
        args = row["provisioned_args"] or {}
        ansible = f"added {','.join(args.get('queues') or []) or 'group queues'}"
    elif row["in_inventory"]:
        ansible = f"inventory {','.join(row['inventory']['queues'])}"
    else:
        ansible = "not provisioned"
    celery = "; ".join(_alive(w) for w in row["alive"]) or "not alive"
    last = row["last_run"]
    last_text = f"#{last['id']} {last['action']} {last['status']}" if last else "-"
    return f"{row['host']:<28} {ansible:<26} {celery:<44} {last_text}"


def _alive(worker: dict[str, Any]) -> str:
    gpu = " gpu" if worker["gpu"] else ""
    return f"{worker['hostname']} [{','.join(worker['queues'])}] x{worker['concurrency']}{gpu}"
