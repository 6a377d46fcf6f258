"""`make compose-check`: README's Docker commands run for real, each check with a time limit.

Installs what it lacks from Debian's packages, starts a Docker daemon when none answers
(and stops only that one), builds the images — on stand-in bases made from Debian's
packages when no image registry answers (devstack/standins/) — brings the stack up with the
monitoring profile, checks it, and takes it down with its volumes. Prints each step's time
and the images' sizes. Runs as root: apt-get, dockerd, and a worker's process killed from
the host as a crash would kill it (`docker kill` is a stop, which the restart policy
ignores). Imports no Django: it drives the stack from outside, as a user would.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from launch import groups
from launch.process_catalog import ROOT

PROJECT = "stockserve-check"  # its own compose project: a user's stack is left alone
WEB = "http://127.0.0.1:8000"
PROMETHEUS = "http://127.0.0.1:9090"
IMAGES = {"web": "stockserve-web:local", "worker": "stockserve-worker:local"}
BEFORE_BYTES = 3_330_000_000  # the one image of the old Dockerfile (issue 42, 2026-11-27)
STANDINS = ROOT / "devstack" / "standins"
STANDIN_BASE = "stockserve-standin/debian:bookworm"
# What each official image is replaced by when no registry answers (image, Dockerfile).
STANDIN_IMAGES = {
    "REDIS_IMAGE": ("stockserve-standin/redis:7.0", "redis.Dockerfile"),
    "POSTGRES_IMAGE": ("stockserve-standin/postgres:15", "postgres.Dockerfile"),
    "PROMETHEUS_IMAGE": ("stockserve-standin/prometheus:2.42", "prometheus.Dockerfile"),
}
DEBIAN_PACKAGES = {  # a command, and the Debian package that brings it
    "dockerd": "docker.io",
    "docker": "docker.io",
    "iptables": "iptables",
    "debootstrap": "debootstrap",
}
CA_DIR = Path("/usr/local/share/ca-certificates")
GRAFANA_FILES = ROOT / "playbooks" / "roles" / "monitoring" / "files"
# Fresh questions for the crash check: nothing cached, nothing to join.
KILL_QUESTIONS = [("AAPL", 2), ("GOOG", 4), ("IBM", 6)]


class CheckFailed(Exception):
    """A check that did not pass within its limit: the message says what was seen."""


@dataclass
class Step:
    name: str
    seconds: float = 0.0
    result: str = ""
    ok: bool = True


@dataclass
class Run:
    steps: list[Step] = field(default_factory=list)

    @contextmanager
    def step(self, name: str) -> Iterator[Step]:
        """Time one step; an exception marks it failed and goes on up."""
        step = Step(name)
        self.steps.append(step)
        start = time.monotonic()
        print(f"--> {name}", flush=True)
        try:
            yield step
        except BaseException as exc:
            step.ok, step.result = False, step.result or f"{type(exc).__name__}: {exc}"
            raise
        finally:
            step.seconds = time.monotonic() - start
            mark = "ok  " if step.ok else "FAIL"
            print(f"    {mark} {step.seconds:6.1f} s  {step.result}", flush=True)


# --- Pure parts (tests/devstack/test_compose_check_reads_what_it_is_told.py) -------------


def debian_mirror(sources: str) -> str | None:
    """The first Debian archive an apt sources text names (deb822 `URIs:` or a one-line
    `deb URI suite`): debootstrap takes its packages from where apt does."""
    for line in sources.splitlines():
        words = line.split()
        if len(words) >= 2 and words[0] == "URIs:" and "security" not in words[1]:
            return words[1]
        if len(words) >= 3 and words[0] == "deb" and "security" not in words[1]:
            return words[2] if words[1].startswith("[") else words[1]
    return None


def size_text(size: int) -> str:
    """Bytes as `docker images` shows them (decimal units)."""
    return f"{size / 1e9:.2f} GB" if size >= 1e9 else f"{size / 1e6:.0f} MB"


def web_is_up(answer: dict[str, Any]) -> bool:
    """Prometheus's answer to `up{job="stockserve"}`: every target scraped (value 1)."""
    results = answer.get("data", {}).get("result", [])
    return bool(results) and all(r.get("value", [None, "0"])[1] == "1" for r in results)


def rule_count(answer: dict[str, Any]) -> int:
    """Rules in Prometheus's /api/v1/rules answer."""
    return sum(len(g.get("rules", [])) for g in answer.get("data", {}).get("groups", []))


def in_flight(detail: dict[str, Any]) -> list[str]:
    """The queues of the stages a running prediction has finished (stages are recorded as
    they finish): non-empty means its pipeline is past its first stage and not done."""
    if detail.get("status") != "running":
        return []
    return [str(stage.get("queue")) for stage in detail.get("stages") or []]


def grafana_problems(files: Path, compose: dict[str, Any]) -> list[str]:
    """What would stop Grafana from provisioning: the datasource, the dashboards provider
    and the dashboard parse; the provider's folder is where compose mounts the dashboard;
    the datasource names the compose service `prometheus`."""
    problems: list[str] = []
    try:
        source = yaml.safe_load((files / "grafana" / "datasource.yml").read_text())
        provider = yaml.safe_load((files / "grafana" / "dashboards.yml").read_text())
        dashboard = json.loads((files / "stockserve-dashboard.json").read_text())
    except (OSError, ValueError, yaml.YAMLError) as exc:
        return [f"unreadable: {exc}"]
    urls = [d.get("url", "") for d in source.get("datasources", [])]
    if not any(url.startswith("http://prometheus:9090") for url in urls):
        problems.append(f"no datasource at the prometheus service: {urls}")
    folders = [p.get("options", {}).get("path") for p in provider.get("providers", [])]
    mounts = compose.get("services", {}).get("grafana", {}).get("volumes", [])
    if not any(folder and f":{folder}/" in str(mount) for folder in folders for mount in mounts):
        problems.append(f"no compose mount puts a dashboard under {folders}")
    if not dashboard.get("panels") or not dashboard.get("title"):
        problems.append("the dashboard has no title or no panels")
    return problems


def report(run: Run, sizes: dict[str, int]) -> str:
    lines = ["", "compose-check:"]
    lines += [
        f"  {'ok  ' if s.ok else 'FAIL'} {s.seconds:7.1f} s  {s.name}: {s.result}"
        for s in run.steps
    ]
    lines.append(f"  total {sum(s.seconds for s in run.steps):.0f} s")
    for name, size in sizes.items():
        lines.append(
            f"  image {name}: {size_text(size)} (before: one image of {size_text(BEFORE_BYTES)})"
        )
    return "\n".join(lines)


# --- The machine: packages, the daemon, images ---------------------------------------------


def sh(*args: str, env: dict[str, str] | None = None, timeout: float | None = None,
       check: bool = True, quiet: bool = False) -> subprocess.CompletedProcess[str]:  # fmt: skip
    out = subprocess.PIPE if quiet else None
    done = subprocess.run(
        args, env=env, timeout=timeout, text=True, stdout=out, stderr=out, cwd=ROOT
    )
    if check and done.returncode != 0:
        raise CheckFailed(f"{' '.join(args[:4])}… exited {done.returncode}")
    return done


def answers(*args: str, timeout: float = 30) -> bool:
    try:
        return sh(*args, timeout=timeout, check=False, quiet=True).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def install_packages(step: Step) -> None:
    missing = sorted({pkg for cmd, pkg in DEBIAN_PACKAGES.items() if not shutil.which(cmd)})
    if not compose_command():
        missing.append("docker-compose")
    if missing:
        sh("apt-get", "update", "-q")
        sh("apt-get", "install", "-y", "-q", "--no-install-recommends", *missing)
    step.result = f"installed {', '.join(missing)}" if missing else "all present"


def compose_command() -> list[str]:
    """Compose v2 (`docker compose`) where the plugin is, else Debian's docker-compose 1.29."""
    if shutil.which("docker") and answers("docker", "compose", "version"):
        return ["docker", "compose"]
    return ["docker-compose"] if shutil.which("docker-compose") else []


def forward_policy() -> str:
    """iptables' FORWARD policy now (dockerd sets it to DROP and leaves it so when it stops,
    which cuts the network namespaces the provisioning tests' hosts live in)."""
    rules = subprocess.run(["iptables", "-S", "FORWARD"], capture_output=True, text=True)
    first = rules.stdout.split("\n", 1)[0].split()
    return first[2] if first[:2] == ["-P", "FORWARD"] and len(first) > 2 else ""


def start_daemon(step: Step, log: Path) -> subprocess.Popen[bytes] | None:
    """dockerd when none answers; the caller stops what this returns, nothing else."""
    if answers("docker", "info"):
        step.result = "a daemon was running"
        return None
    with log.open("ab") as out:
        daemon = groups.spawn(["dockerd", "--storage-driver=overlay2"], log=out)
    wait_for(lambda: answers("docker", "info", timeout=10), 60, "dockerd to answer")
    step.result = f"started dockerd (pid {daemon.pid}, log {log})"
    return daemon


def has_image(name: str) -> bool:
    return answers("docker", "image", "inspect", name)


def registry_answers() -> bool:
    return has_image("python:3.11-slim") or answers(
        "docker", "pull", "python:3.11-slim", timeout=60
    )


def make_standin_base(work: Path) -> None:
    """Debian bookworm, minbase with Python and its venv module, from apt's own mirror,
    imported as an image; services are not started by package scripts (policy-rc.d)."""
    sources = "".join(p.read_text() for p in Path("/etc/apt").rglob("*.list") if p.is_file())
    sources += "".join(p.read_text() for p in Path("/etc/apt").rglob("*.sources"))
    mirror = debian_mirror(sources) or "http://deb.debian.org/debian"
    rootfs = work / "rootfs"
    try:
        sh("debootstrap", "--variant=minbase", "--include=python3,python3-venv,ca-certificates",
           "bookworm", str(rootfs), mirror)  # fmt: skip
        policy = rootfs / "usr" / "sbin" / "policy-rc.d"
        policy.write_text("#!/bin/sh\nexit 101\n")
        policy.chmod(0o755)
        shutil.rmtree(rootfs / "var" / "cache" / "apt" / "archives", ignore_errors=True)
        sh("sh", "-c", f'tar -C "{rootfs}" -c . | docker import - {STANDIN_BASE}')
    finally:
        remove_unmounted(rootfs)


def mounts_under(path: Path, mounts: str) -> list[str]:
    """The mount points inside `path`, deepest first, read from /proc/mounts' text (which
    writes a space in a path as `\\040`)."""
    prefix = str(path) + "/"
    points = [line.split()[1].replace("\\040", " ") for line in mounts.splitlines() if line]
    return sorted((p for p in points if p.startswith(prefix)), key=len, reverse=True)


def remove_unmounted(folder: Path) -> None:
    """Remove `folder` only once nothing is mounted inside it. Why: debootstrap mounts the
    host's /proc and /sys in its root and may bind the host's /dev there; interrupted, it
    can leave them mounted, and removing the folder then deletes the host's device nodes
    (a /dev/null turned into a plain file breaks every process that writes to it)."""
    if not folder.exists():
        return
    for point in mounts_under(folder.resolve(), Path("/proc/mounts").read_text()):
        subprocess.run(["umount", "--lazy", point], check=False)
    left = mounts_under(folder.resolve(), Path("/proc/mounts").read_text())
    if left:
        raise CheckFailed(f"still mounted inside {folder}, so not removed: {', '.join(left)}")
    shutil.rmtree(folder)


def prepare_images(step: Step, work: Path) -> dict[str, str]:
    """The environment that picks the images: empty with a registry, else the stand-ins."""
    if registry_answers():
        step.result = "the registry answers: official images"
        return {}
    if not has_image(STANDIN_BASE):
        make_standin_base(work)
    env = {"PYTHON_BASE": STANDIN_BASE}
    for variable, (image, dockerfile) in STANDIN_IMAGES.items():
        sh("docker", "build", "-q", "--build-arg", f"BASE={STANDIN_BASE}", "-t", image,
           "-f", str(STANDINS / dockerfile), str(STANDINS), quiet=True)  # fmt: skip
        env[variable] = image
    step.result = "no registry: stand-ins from Debian's packages, no Grafana"
    return env


def extra_ca_certs() -> str:
    """The host's extra CA certificates (a proxy that re-signs HTTPS), for pip in the build."""
    return "".join(p.read_text() for p in sorted(CA_DIR.glob("*.crt"))) if CA_DIR.is_dir() else ""


# --- The stack ---------------------------------------------------------------------------


def wait_for(ready: Callable[[], Any], limit: float, what: str) -> Any:
    """Poll `ready` each second until it returns something true, at most `limit` s."""
    deadline = time.monotonic() + limit
    while True:
        value = ready()
        if value:
            return value
        if time.monotonic() > deadline:
            raise CheckFailed(f"no {what} within {limit:.0f} s")
        time.sleep(1)


def http(method: str, url: str, body: dict[str, Any] | None = None,
         token: str = "") -> tuple[int, dict[str, Any]]:  # fmt: skip
    """(status, JSON) of one request; (0, {}) when nothing answered."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Token {token}")
    try:
        with urllib.request.urlopen(request, timeout=40) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as exc:
        try:
            return exc.code, json.loads(exc.read() or b"{}")
        except ValueError:
            return exc.code, {}
    except (OSError, ValueError):
        return 0, {}


class Stack:
    def __init__(self, env: dict[str, str]) -> None:
        self.env = {**os.environ, "COMPOSE_PROJECT_NAME": PROJECT, **env}
        self.compose = compose_command()
        self.grafana = "PYTHON_BASE" not in env  # stand-ins: Debian packages no Grafana
        self.token = ""

    def run(self, *args: str, quiet: bool = False) -> subprocess.CompletedProcess[str]:
        return sh(*self.compose, "--profile", "monitoring", *args, env=self.env, quiet=quiet)

    def services(self) -> list[str]:
        names = self.run("config", "--services", quiet=True).stdout.split()
        return [n for n in names if self.grafana or n != "grafana"]

    def container(self, service: str) -> dict[str, Any]:
        ids = self.run("ps", "-q", service, quiet=True).stdout.split()
        if not ids:
            raise CheckFailed(f"no {service} container")
        found: list[dict[str, Any]] = json.loads(sh("docker", "inspect", ids[0], quiet=True).stdout)
        return found[0]

    def predict(self, symbol: str, horizon: int) -> dict[str, Any]:
        status, answer = http(
            "POST", f"{WEB}/api/v1/predictions/", {"symbol": symbol, "horizon": horizon}, self.token
        )
        if status not in (200, 202):
            raise CheckFailed(f"POST {symbol}/{horizon}: HTTP {status} {answer}")
        return answer

    def prediction(self, answer: dict[str, Any], wait: int = 0) -> dict[str, Any]:
        url = f"{WEB}/api/v1/predictions/{answer['id']}/" + (f"?wait={wait}" if wait else "")
        return http("GET", url, token=self.token)[1]

    def finished(self, answer: dict[str, Any], limit: float) -> dict[str, Any]:
        def done() -> dict[str, Any] | None:
            detail = self.prediction(answer, wait=10)
            if detail.get("status") == "failed":
                raise CheckFailed(f"{answer['id']} failed: {detail.get('error')}")
            return detail if detail.get("status") == "done" else None

        result: dict[str, Any] = wait_for(done, limit, f"`done` for {answer.get('id')}")
        return result


def check_ready(stack: Stack, step: Step) -> None:
    def ready() -> dict[str, Any] | None:
        status, answer = http("GET", f"{WEB}/readyz")
        return answer if status == 200 and answer.get("ready") else None

    answer = wait_for(ready, 600, "ready /readyz")
    step.result = f"/readyz {answer['checks']}"
    token = stack.run("exec", "-T", "web", "python", "manage.py", "create_api_token",
                      "compose-check", quiet=True).stdout  # fmt: skip
    stack.token = token.split()[-1]


def check_predictions(stack: Stack, step: Step) -> None:
    start = time.monotonic()
    cold = stack.finished(stack.predict("MSFT", 3), 300)
    cold_s = time.monotonic() - start
    start = time.monotonic()
    cached = stack.predict("MSFT", 3)
    if cached.get("status") != "done" or not cached.get("cache_hit"):
        cached = stack.finished(cached, 30)
    outcomes = sorted({str(stage.get("outcome")) for stage in cold.get("stages") or []})
    again_s = time.monotonic() - start
    step.result = (
        f"cold MSFT/3 done in {cold_s:.1f} s, stages {outcomes}; again: done in "
        f"{again_s:.2f} s, cache_hit={cached.get('cache_hit')}"
    )


def check_prometheus(step: Step) -> None:
    query = urllib.parse.quote('up{job="stockserve"}')

    def up() -> bool:
        return web_is_up(http("GET", f"{PROMETHEUS}/api/v1/query?query={query}")[1])

    wait_for(up, 180, "up == 1 for web")
    rules = rule_count(http("GET", f"{PROMETHEUS}/api/v1/rules")[1])
    if rules == 0:
        raise CheckFailed("Prometheus loaded no alert rules")
    step.result = f'up{{job="stockserve"}} == 1, {rules} rules loaded'


def check_worker_crash(stack: Stack, step: Step) -> None:
    """Questions in flight, the cpu worker's process killed from the host: every accepted
    request still ends done (acks_late, the sweeper), and Docker starts the worker again."""
    accepted = [stack.predict(symbol, horizon) for symbol, horizon in KILL_QUESTIONS]

    def past_a_stage() -> list[str]:
        return [q for a in accepted for q in in_flight(stack.prediction(a))]

    seen = _quietly(lambda: wait_for(past_a_stage, 180, "a prediction past its first stage"))
    before = stack.container("worker-cpu")
    groups.signal_pids([before["State"]["Pid"]], signal.SIGKILL)
    killed = time.monotonic()
    for answer in accepted:
        stack.finished(answer, 420)
    after = wait_for(
        lambda: (c := stack.container("worker-cpu"))["State"]["Running"] and c, 120, "restart"
    )
    if after["RestartCount"] <= before["RestartCount"]:
        raise CheckFailed("worker-cpu was not restarted by its policy")
    step.result = (
        f"{len(accepted)} accepted; at the kill, stages finished on {seen or 'none seen'};"
        f" all done {time.monotonic() - killed:.0f} s after it; worker-cpu restarted "
        f"({after['HostConfig']['RestartPolicy']['Name']}, count {after['RestartCount']})"
    )


def _quietly(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except CheckFailed:
        return None


def check_images(step: Step) -> dict[str, int]:
    """Each image's size, and no trace of the build's CA certificates in either."""
    sizes = {}
    for name, image in IMAGES.items():
        sizes[name] = int(sh("docker", "image", "inspect", "-f", "{{.Size}}", image,
                             quiet=True).stdout)  # fmt: skip
        history = sh("docker", "history", "--no-trunc", image, quiet=True).stdout
        if "BEGIN CERTIFICATE" in history or "EXTRA_CA_CERTS" in history:
            raise CheckFailed(f"{image}'s history carries the build's CA certificates")
        listing = "ls -A /usr/local/share/ca-certificates 2>/dev/null; true"
        inside = sh("docker", "run", "--rm", "--entrypoint", "sh", image, "-c", listing,
                    quiet=True).stdout  # fmt: skip
        if "build-extra" in inside:
            raise CheckFailed(f"{image} carries the build's CA certificates")
    step.result = ", ".join(f"{n} {size_text(s)}" for n, s in sizes.items())
    return sizes


def check_down(stack: Stack, step: Step) -> None:
    stack.run("down", "-v", "--remove-orphans")
    label = f"label=com.docker.compose.project={PROJECT}"
    left = [
        sh("docker", *kind, "-q", "--filter", label, quiet=True).stdout.split()
        for kind in (("ps", "-a"), ("volume", "ls"), ("network", "ls"))
    ]
    if any(left):
        raise CheckFailed(f"left after down -v: containers, volumes, networks = {left}")
    step.result = "no container, volume or network of the project left"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="leave the stack up at the end")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("compose-check runs as root (apt-get, dockerd, killing a worker)", file=sys.stderr)
        return 2
    var = ROOT / "var" / "compose-check"
    var.mkdir(parents=True, exist_ok=True)
    run, sizes, daemon, stack = Run(), {}, None, None
    policy = forward_policy()
    try:
        with run.step("packages") as step:
            install_packages(step)
        with run.step("docker daemon") as step:
            daemon = start_daemon(step, var / "dockerd.log")
        with run.step("base images") as step:
            work = Path(tempfile.mkdtemp(dir=var))
            try:
                stack = Stack(prepare_images(step, work))
            finally:
                remove_unmounted(work)
        with run.step("grafana provisioning") as step:
            compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
            problems = grafana_problems(GRAFANA_FILES, compose)
            if problems:
                raise CheckFailed("; ".join(problems))
            step.result = "files valid" + ("" if stack.grafana else "; Grafana untested: no image")
        with run.step("build (compose build)") as step:
            stack.env["EXTRA_CA_CERTS"] = extra_ca_certs()
            stack.run("build")
        with run.step("image sizes") as step:
            sizes = check_images(step)
        with run.step("up (compose up -d)") as step:
            services = stack.services()
            stack.run("up", "-d", *services)
            step.result = f"{len(services)} services"
        with run.step("ready") as step:
            check_ready(stack, step)
        with run.step("predictions") as step:
            check_predictions(stack, step)
        with run.step("prometheus") as step:
            check_prometheus(step)
        with run.step("worker killed with work in flight") as step:
            check_worker_crash(stack, step)
        if not args.keep:
            with run.step("down -v") as step:
                check_down(stack, step)
    except Exception as exc:  # every failure still takes the stack down
        print(f"compose-check failed: {exc}", file=sys.stderr)
        if stack and not args.keep:
            stack.run("logs", "--tail", "40")
            stack.run("down", "-v", "--remove-orphans")
    finally:
        if daemon and not args.keep:
            groups.stop_group(daemon, grace=60)
            if policy:  # as it was before the daemon this run started
                subprocess.run(["iptables", "-P", "FORWARD", policy], check=False)
        print(report(run, sizes))
    return 0 if all(s.ok for s in run.steps) else 1


if __name__ == "__main__":
    sys.exit(main())
