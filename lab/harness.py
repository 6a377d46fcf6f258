"""The lab's harness, written once: how a study runs and writes its report (`study`, with
`report_dir` and the `header` every report starts with), the `make run` stack it measures
(`Stack`) and one prediction asked of it (`predict`). Starting a server and waiting for it
are the product's (`loadtests.deployment.serve`, `wait_until`): `make experiment` needs
them too.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import requests

from devstack.redis import free_port
from devstack.supervisor import Interrupted, Supervisor, handle_signals
from launch import process_catalog
from loadtests.deployment import PREDICTIONS, QUESTION, answers, serve
from loadtests.report import machine, save

ROOT = process_catalog.ROOT
REPORTS = ROOT / "lab" / "reports"


def report_dir(name: str, reports: Path = REPORTS) -> Path:
    """A new report folder, `<name>-<local time>`, under `reports`."""
    return reports / f"{name}-{datetime.now():%Y%m%d-%H%M%S}"


def commit_of(root: Path = ROOT) -> str:
    """The checkout's commit, `-dirty` with local changes; `unknown` outside git."""
    out = subprocess.run(["git", "-C", str(root), "describe", "--always", "--dirty"],
                         capture_output=True, text=True)  # fmt: skip
    return out.stdout.strip() or "unknown"


def header(module: str, root: Path = ROOT) -> dict[str, Any]:
    """What every report starts with: when, the command that reproduces it, the commit it
    measured and the machine (its load average says how busy it was)."""
    return {
        "date": datetime.now().strftime("%Y-%m-%d %H:%M"),
        "command": " ".join(["python -m", module, *sys.argv[1:]]),
        "root": str(root),
        "commit": commit_of(root),
        "machine": machine(),
    }


def study(
    name: str,
    measure: Callable[[Supervisor, Path], dict[str, Any]],
    report: Callable[[dict[str, Any]], str],
    reports: Path = REPORTS,
    keep: bool = False,
) -> int:
    """Run one study the one way: a work folder and a Supervisor of its own, every process
    it started stopped whatever happens (Ctrl-C and SIGTERM included), then the report
    written to `reports`/`name`-<time>/ and printed. `keep`: leave the work folder (logs)."""
    workdir = Path(tempfile.mkdtemp(prefix=f"stockserve-{name}-"))
    sup = Supervisor(restart=False)
    try:
        with handle_signals():
            results = measure(sup, workdir)
    except Interrupted as exc:
        print(f"interrupted by {exc}", file=sys.stderr)
        return 130
    finally:
        sup.stop()
    text = report(results)
    out = report_dir(name, reports)
    save(out, text, results)
    if not keep:
        shutil.rmtree(workdir, ignore_errors=True)
    print(text)
    print(f"Written to {out}" + (f"; the work folder (logs) is {workdir}" if keep else ""))
    return 0


@dataclass
class Stack:
    """One `make run` stack (`python -m devstack`) with its own VAR_DIR, ports, Redis and
    database; `extra` are this deployment's settings, `root` the checkout it runs."""

    sup: Supervisor
    var_dir: Path
    logs: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None
    extra: dict[str, str] = field(default_factory=dict)
    root: Path = ROOT

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        keep = {k: v for k, v in os.environ.items() if not k.startswith(("REDIS_", "DATABASE_"))}
        return {
            **keep,
            "VAR_DIR": str(self.var_dir),
            "PORT": str(self.port),
            "WS_PORT": str(free_port()),
            "THROTTLE_ANON": "100000000/min",
            "PRECOMPUTE_SYMBOLS": "",  # no background work between the measurements
            # The market stands still: `make run`'s replay clock moves a day every 10 s and
            # each new day makes every cached answer stale (a recomputation), which put
            # 300-900 ms into the cached path's p99 (measured 2026-11-25).
            "MARKET_CLOCK": "live",
            # The sample bars end in 2013: under the live clock every forecast of record is
            # older than the default retention, and the first scoring pass (a fresh stack's
            # new market day) deleted them, and with them the shadows they were waiting for.
            "FORECAST_RECORD_DAYS": "36500",
            "THROTTLE_USER": "100000000/min",
            "THROTTLE_EXPENSIVE": "100000000/min",
            "PRICE_PROVIDERS": "sample",
            "MENTION_PROVIDERS": "sample",
            "LOG_LEVEL": "WARNING",
            "TF_CPP_MIN_LOG_LEVEL": "3",
            **self.extra,
        }

    def start(self, timeout_s: float = 240) -> float:
        """Start and wait for `/readyz`; seconds it took."""
        log = self.logs / f"stack-{int(time.time())}.log"
        argv, ready = process_catalog.stack().argv(), answers(f"{self.base}/readyz")
        self.proc, took = serve(
            self.sup, "stack", argv, ready, env=self.env(), log_path=log, cwd=self.root,
            timeout_s=timeout_s,
        )  # fmt: skip
        return took

    def stop(self) -> None:
        if self.proc is not None:
            self.sup.stop(self.proc, 40)  # the launcher stops its children first
            self.proc = None

    def manage(self, *args: str) -> str:
        out = subprocess.run(
            process_catalog.manage(*args).argv(),
            cwd=self.root,
            env=self.env(),
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout.strip()


def predict(base: str, token: str, **body: Any) -> tuple[float, dict[str, Any]]:
    """Submit and wait for the final state; (latency ms as the client saw it, prediction)."""
    headers = {"Authorization": f"Token {token}"}
    start = time.perf_counter()
    response = requests.post(f"{base}{PREDICTIONS}", json={**QUESTION, **body}, headers=headers)
    response.raise_for_status()
    prediction = response.json()
    while prediction["status"] not in ("done", "failed"):
        url = f"{base}{prediction['links']['self']}?wait=60"
        prediction = requests.get(url, headers=headers, timeout=90).json()
    latency = (time.perf_counter() - start) * 1000
    if prediction["status"] != "done":
        raise RuntimeError(f"prediction failed: {prediction['error']}")
    return latency, prediction
