"""Turn ansible-runner events into a console stream, a growing log and an outcome.

The event handler runs inside ansible-runner's loop for every event, so it only appends
and, at most twice a second, writes the log so far to the run's row (the dashboard polls
it). It must return True, or runner drops the event and the stats come back empty
(docs/architecture.md, rule 13).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from provisioning.models import ProvisioningRun

FLUSH_SECONDS = 0.5
ANSI = re.compile(r"\x1b\[[0-9;]*m")
MAX_DETAIL = 1500


def _tail(text: str, lines: int = 12) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _failure_detail(res: dict[str, Any]) -> str:
    """The most useful words of a failed task's result: its message, then its output."""
    parts = []
    if res.get("msg"):
        parts.append(str(res["msg"]).strip())
    for key in ("stderr", "stdout", "module_stderr", "exception"):
        value = res.get(key)
        if key == "exception" and "traceback unavailable" in str(value):
            continue
        if isinstance(value, str) and value.strip() and value.strip() not in parts:
            parts.append(_tail(value))
    return "\n".join(parts)[:MAX_DETAIL] or "no message"


class RunRecorder:
    def __init__(self, run: ProvisioningRun, echo: Callable[[str], None] | None = None) -> None:
        self.run = run
        self.echo = echo
        self.lines: list[str] = []
        self.errors: list[str] = []
        self.last_error: dict[str, str] = {}
        self.stats: dict[str, dict[str, int]] = {}
        self._flushed_at = 0.0

    def handle(self, event: dict[str, Any]) -> bool:
        text = ANSI.sub("", event.get("stdout") or "")
        if text:
            self.lines.append(text)
            if self.echo:
                self.echo(text)
        self._note(event)
        if time.monotonic() - self._flushed_at >= FLUSH_SECONDS:
            self.flush()
        return True

    def _note(self, event: dict[str, Any]) -> None:
        kind = event.get("event", "")
        data = event.get("event_data") or {}
        host = data.get("host") or self.run.host
        res = data.get("res") or {}
        if kind == "runner_on_failed" and not data.get("ignore_errors"):
            task = data.get("task") or "a task"
            self._error(host, f"{host}: task '{task}' failed: {_failure_detail(res)}")
        elif kind == "runner_on_unreachable":
            self._error(host, f"{host} is unreachable: {_failure_detail(res)}")
        elif kind == "playbook_on_no_hosts_matched":
            self._error("", f"No host matched {self.run.host!r} in the inventory.")
        elif kind == "playbook_on_stats":
            self.stats = {
                key: dict(data.get(key) or {})
                for key in ("ok", "changed", "failures", "dark", "rescued", "skipped")
            }

    def _error(self, host: str, text: str) -> None:
        self.errors.append(text)
        self.last_error[host] = text

    def flush(self) -> None:
        self._flushed_at = time.monotonic()
        ProvisioningRun.objects.filter(pk=self.run.pk).update(log=self.log)

    @property
    def log(self) -> str:
        return "\n".join(self.lines) + ("\n" if self.lines else "")

    def total(self, key: str) -> int:
        return sum(self.stats.get(key, {}).values())

    def error_text(self, status: str, rc: int | None) -> str:
        """Why the run failed, in a few lines; empty when it did not."""
        if status == "successful" and rc == 0 and not self.total("failures"):
            return ""
        if self.last_error:
            # Per host, the last failure: a rescued one is followed by the role's own,
            # clearer message (the worker role explains why a worker did not come up).
            return "\n".join(self.last_error.values())
        if self.errors:
            return self.errors[-1]
        if status == "timeout":
            return "The run took longer than its time limit and was stopped."
        if status == "canceled":
            return "The run was canceled."
        return f"ansible-playbook exited with {rc}:\n{_tail(self.log)}"
