"""Files that cannot import the process catalog, generated from it.

    python -m devstack.render            # rewrite them (what `make generate` runs)
    python -m devstack.render --check    # exit 1 if one is out of date (a test runs this)

docker-compose.yml and the Dockerfile take their commands from `launch.process_catalog`, and
the playbooks take theirs from a variables file whose values carry the playbooks' own
Jinja expressions for names, queues, ports and sizes.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

from launch import process_catalog
from launch.process_catalog import ROOT, Command

GENERATED = "Generated from launch/process_catalog.py by `make generate`; edit that, not this."


def _list(command: Command) -> str:
    return json.dumps(command.argv(python="python"))


def _tensorflow_pin() -> str:
    """requirements.txt's TensorFlow version: the worker image installs its CPU-only wheel
    (`tensorflow-cpu`, the same version), the web image none."""
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        if line.startswith("tensorflow=="):
            return line.split("==", 1)[1].split()[0]
    raise ValueError("requirements.txt pins no tensorflow==")


def dockerfile() -> str:
    web = process_catalog.web("0.0.0.0:8000")
    tf = _tensorflow_pin()
    return f"""# {GENERATED}
# Three images from one file, each only its virtualenv and the code (docs/operating.md,
# "Running it with Docker"):
#   --target web         gunicorn, websockets, migrations, beat, relay, sweeper, stream:
#                        no TensorFlow
#   --target worker      the Celery workers, with tensorflow-cpu=={tf} (the default)
#   --target worker-gpu  the same with tensorflow[and-cuda]=={tf} (built on demand only)
# BASE: any Debian-like image with Python 3.11 (python3, its venv module) and
# ca-certificates: the official python:3.11-slim, or a stand-in (make compose-check).
ARG BASE=python:3.11-slim

FROM ${{BASE}} AS build-web
# PEM certificates for a proxy that re-signs HTTPS, trusted by pip in the build stages only:
# no image below copies them, and no RUN of theirs names this argument.
ARG EXTRA_CA_CERTS=""
RUN if [ -n "$EXTRA_CA_CERTS" ]; then \\
      printf '%s\\n' "$EXTRA_CA_CERTS" > /usr/local/share/ca-certificates/build-extra.crt \\
      && update-ca-certificates; fi
ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt PIP_NO_CACHE_DIR=1 \\
    PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
COPY requirements.txt /src/
COPY clients/python /src/clients/python
RUN grep -v '^tensorflow==' /src/requirements.txt > /src/requirements-web.txt \\
    && python3 -m venv /opt/venv \\
    && /opt/venv/bin/pip install -r /src/requirements-web.txt /src/clients/python

FROM ${{BASE}} AS runtime
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PATH=/opt/venv/bin:$PATH
RUN useradd --create-home app \\
    && mkdir -p /app/var /run/stockserve && chown app /app/var /run/stockserve
WORKDIR /app
EXPOSE 8000 8001

FROM runtime AS web
# No TensorFlow here, and no process of this image runs a model: the check that a deep
# model's Keras backend is installed (predictions.E004) is the worker image's.
ENV SILENCED_SYSTEM_CHECKS=predictions.E004
COPY --from=build-web /opt/venv /opt/venv
COPY . .
USER app
CMD {_list(web)}

# TensorFlow's C++ headers (430 MB) serve only to build custom ops: not kept.
FROM build-web AS build-worker
RUN /opt/venv/bin/pip install tensorflow-cpu=={tf} \\
    && rm -rf /opt/venv/lib/python3*/site-packages/tensorflow/include

FROM runtime AS worker
COPY --from=build-worker /opt/venv /opt/venv
COPY . .
USER app
CMD {_list(process_catalog.worker("cpu", "cpu", 2))}

FROM build-web AS build-worker-gpu
RUN /opt/venv/bin/pip install "tensorflow[and-cuda]=={tf}" \\
    && rm -rf /opt/venv/lib/python3*/site-packages/tensorflow/include

FROM runtime AS worker-gpu
COPY --from=build-worker-gpu /opt/venv /opt/venv
COPY . .
USER app
CMD {_list(process_catalog.worker("cpu", "cpu", 2))}
"""


MONITORING = "playbooks/roles/monitoring/files"
GRAFANA = "/etc/grafana/provisioning"
SECRETS = "/run/stockserve"  # the `secrets` volume: the Redis password and the URLs with it


def _redis_command(maxmemory_mb: int, policy: str) -> str:
    """redis-server with every path and rule on its command line, no image entrypoint: its
    data in /data, an ACL file there (the restricted users survive a restart) whose default
    user is rewritten at each start with the password of the `secrets` volume (Redis ignores
    requirepass once it loads an ACL file), the catalog's persistence, memory rules and
    client bounds (the image is Redis 7). `$$` is compose's escape for the shell's `$`."""
    flags = [
        *process_catalog.redis_persistence(),
        *process_catalog.redis_memory(maxmemory_mb, policy),
        *process_catalog.redis_clients(),
    ]
    shown = " ".join(shlex.quote(flag) for flag in flags)
    digest = f"$$(sha256sum < {SECRETS}/redis-password | cut -d' ' -f1)"
    script = (
        "touch /data/users.acl"
        f' && {{ echo "user default on #{digest} ~* &* +@all";'
        " grep -v '^user default ' /data/users.acl || true; } > /data/users.acl.new"
        " && mv /data/users.acl.new /data/users.acl"
        f" && exec redis-server --dir /data --aclfile /data/users.acl {shown}"
    )
    return json.dumps(["sh", "-c", script])


REDIS_HEALTH = json.dumps(
    ["CMD-SHELL", f'REDISCLI_AUTH="$$(cat {SECRETS}/redis-password)" redis-cli ping | grep -q PONG']
)
WEB_HEALTH = json.dumps(
    ["CMD", "python", "-c",
     "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=3)"]
)  # fmt: skip
# First start: a random password (REDIS_PASSWORD, if set, replaces it), then the URLs
# the services read through REDIS_URL_FILE and QUEUE_REDIS_URL_FILE (config/env.py).
SECRETS_SCRIPT = f"""\
cd {SECRETS} && umask 022 &&
if [ -n "$$REDIS_PASSWORD" ]; then printf %s "$$REDIS_PASSWORD" > redis-password;
elif [ ! -s redis-password ]; then
python -c 'import secrets; print(secrets.token_urlsafe(32), end="")' > redis-password; fi &&
printf 'redis://:%s@redis:6379/0' "$$(cat redis-password)" > redis-url &&
printf 'redis://:%s@queue-redis:6379/0' "$$(cat redis-password)" > queue-redis-url"""


def compose() -> str:
    main_redis = _redis_command(
        process_catalog.REDIS_MAXMEMORY_MB, process_catalog.MAIN_REDIS_POLICY
    )
    queue_redis = _redis_command(
        process_catalog.QUEUE_REDIS_MAXMEMORY_MB, process_catalog.QUEUE_REDIS_POLICY
    )
    secrets_script = "\n".join("        " + line for line in SECRETS_SCRIPT.splitlines())
    after_migrate = "depends_on: {migrate: {condition: service_completed_successfully}}"
    return f"""# {GENERATED}
# The stack with PostgreSQL and Redis: `docker compose up --build`, then open http://127.0.0.1:8000/
# (docs/operating.md, "Running it with Docker"; `make compose-check` runs it and checks it).
# On the host only 127.0.0.1 listens: web 8000, ws 8001, and with `--profile monitoring`
# Prometheus 9090 and Grafana 3000; the rest talk on the compose network alone. Every
# process runs as its image's unprivileged user with its command, data path and password
# written here. Images by variable: PYTHON_BASE, REDIS_IMAGE, POSTGRES_IMAGE,
# PROMETHEUS_IMAGE, GRAFANA_IMAGE (the official ones unless set).
x-build-args: &build-args
  BASE: ${{PYTHON_BASE:-python:3.11-slim}}
  EXTRA_CA_CERTS: ${{EXTRA_CA_CERTS:-}}  # PEM text for a re-signing proxy: build stages only
x-web-image: &web-image
  build: {{context: ., target: web, args: *build-args}}
  image: stockserve-web:${{STOCKSERVE_TAG:-local}}
x-worker-image: &worker-image
  build: {{context: ., target: worker, args: *build-args}}
  image: stockserve-worker:${{STOCKSERVE_TAG:-local}}
x-app: &app
  restart: unless-stopped  # a process that exits is started again (migrate: "no")
  environment:
    DATABASE_URL: postgres://stockserve:stockserve@postgres:5432/stockserve
    REDIS_URL_FILE: {SECRETS}/redis-url
    QUEUE_REDIS_URL_FILE: {SECRETS}/queue-redis-url
    SECRET_KEY: ${{SECRET_KEY:-change-me-in-production}}
    METRICS_TOKEN: ${{METRICS_TOKEN:-change-me-metrics-token}}
    ALLOWED_HOSTS: 127.0.0.1,localhost,web
    PRICE_PROVIDERS: ${{PRICE_PROVIDERS:-yfinance,sample}}
    X_BEARER_TOKEN: ${{X_BEARER_TOKEN:-}}
    VAR_DIR: /app/var
  volumes: ["secrets:{SECRETS}:ro"]
  depends_on:
    redis: {{condition: service_healthy}}
    queue-redis: {{condition: service_healthy}}
    postgres: {{condition: service_healthy}}

services:
  secrets:  # a one-off: the Redis password, generated into its volume on first start
    <<: *web-image
    command:
      - sh
      - -c
      - >-
{secrets_script}
    environment:
      REDIS_PASSWORD: ${{REDIS_PASSWORD:-}}  # URL-safe characters only
    volumes: ["secrets:{SECRETS}"]
    restart: "no"
  redis:
    image: ${{REDIS_IMAGE:-redis:7-alpine}}
    user: redis
    # An append-only file synced every second: a restart keeps the queues and results.
    # At most {process_catalog.REDIS_MAXMEMORY_MB} MB, then only keys with a TTL are evicted.
    # Each Redis: a command of at most {process_catalog.REDIS_MAX_COMMAND}, clients' \
buffers within {process_catalog.REDIS_CLIENTS_MEMORY} of maxmemory (docs/clients.md, "Bounds").
    command: {main_redis}
    expose: ["6379"]
    volumes: ["redis-data:/data", "secrets:{SECRETS}:ro"]
    healthcheck: {{test: {REDIS_HEALTH}, interval: 2s, retries: 30}}
    restart: unless-stopped
    depends_on: {{secrets: {{condition: service_completed_successfully}}}}
  queue-redis:  # the stream clients' streams and users (docs/clients.md): full, it refuses
    image: ${{REDIS_IMAGE:-redis:7-alpine}}
    user: redis
    command: {queue_redis}
    expose: ["6379"]
    volumes: ["queue-redis-data:/data", "secrets:{SECRETS}:ro"]
    healthcheck: {{test: {REDIS_HEALTH}, interval: 2s, retries: 30}}
    restart: unless-stopped
    depends_on: {{secrets: {{condition: service_completed_successfully}}}}
  postgres:  # the image's entrypoint makes the cluster from POSTGRES_* on first start
    image: ${{POSTGRES_IMAGE:-postgres:16-alpine}}
    user: postgres
    environment:
      POSTGRES_USER: stockserve
      POSTGRES_PASSWORD: stockserve
      POSTGRES_DB: stockserve
      PGDATA: /var/lib/postgresql/data
    expose: ["5432"]
    volumes: ["postgres-data:/var/lib/postgresql/data"]
    healthcheck: {{test: ["CMD", "pg_isready", "-U", "stockserve"], interval: 2s, retries: 30}}
    restart: unless-stopped
  migrate:
    <<: [*app, *web-image]
    command: {_list(process_catalog.migrate())}
    restart: "no"
  web:
    <<: [*app, *web-image]
    command: {_list(process_catalog.web("0.0.0.0:8000"))}
    ports: ["127.0.0.1:8000:8000"]
    healthcheck: {{test: {WEB_HEALTH}, interval: 5s, retries: 30}}
    {after_migrate}
  worker-io:
    <<: [*app, *worker-image]
    command: {_list(process_catalog.worker("io", "io,scoring", 4))}
    {after_migrate}
  worker-cpu:  # `--scale worker-cpu=3` for more
    <<: [*app, *worker-image]
    command: {_list(process_catalog.worker("cpu", "cpu", 2))}
    {after_migrate}
  worker-spare:  # anonymous and background questions (docs/operating.md, the spare lane)
    <<: [*app, *worker-image]
    command: {_list(process_catalog.spare_worker("spare", 2))}
    # Its niceness counts only inside its container; between containers the CPU weight
    # does: 110 of the others' 1024 is a nice-10 process's weight against a nice-0 one's.
    cpu_shares: 110
    {after_migrate}
  beat:
    <<: [*app, *web-image]
    command: {_list(process_catalog.beat("/app/var/celerybeat-schedule"))}
    {after_migrate}
  ws:  # websockets of the live pages; pages find it at the web host, port 8001 (WS_PORT)
    <<: [*app, *web-image]
    command: {_list(process_catalog.websocket("0.0.0.0", 8001))}
    ports: ["127.0.0.1:8001:8001"]
    {after_migrate}
  relay:
    <<: [*app, *web-image]
    command: {_list(process_catalog.relay())}
    {after_migrate}
  sweeper:
    <<: [*app, *web-image]
    command: {_list(process_catalog.sweeper())}
    {after_migrate}
  stream:  # the stream clients' consumer (clients/python)
    <<: [*app, *web-image]
    command: {_list(process_catalog.stream_consumer())}
    {after_migrate}

  # `docker compose --profile monitoring up`: Prometheus with the alert rules on :9090,
  # Grafana with the dashboard on :3000 (the same files the monitoring playbook installs).
  prometheus:
    image: ${{PROMETHEUS_IMAGE:-prom/prometheus:v2.53.2}}
    profiles: [monitoring]
    user: "65534:65534"  # nobody, as in the official image
    environment:
      METRICS_TOKEN: ${{METRICS_TOKEN:-change-me-metrics-token}}
    # The scrape token goes to a file only Prometheus reads, never into its config.
    entrypoint:
      - /bin/sh
      - -c
      - >-
        umask 077 && printf %s "$$METRICS_TOKEN" > /tmp/metrics_token &&
        exec prometheus --config.file=/etc/prometheus/prometheus.yml
        --storage.tsdb.path=/prometheus --web.listen-address=:9090
    volumes:
      - ./{MONITORING}/prometheus-compose.yml:/etc/prometheus/prometheus.yml:ro
      - ./{MONITORING}/stockserve-rules.yml:/etc/prometheus/stockserve-rules.yml:ro
      - prometheus-data:/prometheus
    ports: ["127.0.0.1:9090:9090"]
    restart: unless-stopped
    depends_on: {{web: {{condition: service_healthy}}}}
  grafana:
    image: ${{GRAFANA_IMAGE:-grafana/grafana:11.2.0}}
    profiles: [monitoring]
    user: "472"  # grafana, as in the official image
    environment:
      GF_PATHS_DATA: /var/lib/grafana
      GF_PATHS_PROVISIONING: {GRAFANA}
    volumes:
      - ./{MONITORING}/grafana/datasource.yml:{GRAFANA}/datasources/stockserve.yml:ro
      - ./{MONITORING}/grafana/dashboards.yml:{GRAFANA}/dashboards/stockserve.yml:ro
      - ./{MONITORING}/stockserve-dashboard.json:/var/lib/grafana/dashboards/stockserve.json:ro
      - grafana-data:/var/lib/grafana
    ports: ["127.0.0.1:3000:3000"]
    restart: unless-stopped
    depends_on: [prometheus]

# Named volumes outlive `docker compose down`; `down -v` removes them.
volumes:
  secrets:
  redis-data:
  queue-redis-data:
  postgres-data:
  prometheus-data:
  grafana-data:
"""


def ansible_vars() -> str:
    """Argument lists after the virtualenv's python, run in the release directory."""
    commands = {
        "stockserve_web_args": process_catalog.web(
            "{{ web_host }}:{{ web_port }}", "{{ web_workers }}", "{{ web_threads }}"
        ),
        "stockserve_websocket_args": process_catalog.websocket(
            "{{ web_host }}", "{{ web_ws_port }}"
        ),
        "stockserve_relay_args": process_catalog.relay(),
        "stockserve_stream_consumer_args": process_catalog.stream_consumer(),
        "stockserve_beat_args": process_catalog.beat(
            "{{ stockserve_prefix }}/var/celerybeat-schedule"
        ),
        "stockserve_sweeper_args": process_catalog.sweeper("{{ scheduler_sweep_interval }}"),
        "stockserve_worker_args": process_catalog.worker(
            "{{ worker_name }}",
            "{{ worker_queues | reject('equalto', 'spare') | join(',') }}",
            "{{ worker_concurrency }}",
            gpu="{{ worker_gpu }}",
            loglevel="{{ worker_loglevel }}",
            max_memory_mb="{{ worker_max_memory_mb }}",
        ),
        "stockserve_spare_worker_args": process_catalog.spare_worker(
            "{{ worker_spare_name }}",
            "{{ worker_spare_concurrency }}",
            loglevel="{{ worker_loglevel }}",
            max_memory_mb="{{ worker_max_memory_mb }}",
        ),
    }
    lines = ["---", f"# {GENERATED}", "# The roles run: python {{ <name> | join(' ') }}"]
    for name, command in commands.items():
        lines.append(f"{name}:")
        lines += [f"  - {json.dumps(arg)}" for arg in command.args]
    return "\n".join(lines) + "\n"


FILES: dict[Path, Callable[[], str]] = {
    ROOT / "Dockerfile": dockerfile,
    ROOT / "docker-compose.yml": compose,
    ROOT / "playbooks" / "group_vars" / "all" / "commands.yml": ansible_vars,
}


def out_of_date() -> list[Path]:
    return [p for p, render in FILES.items() if not p.exists() or p.read_text() != render()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report stale files")
    args = parser.parse_args()
    stale = out_of_date()
    if args.check:
        for path in stale:
            print(f"{path.relative_to(ROOT)} is out of date: run `make generate`", file=sys.stderr)
        return 1 if stale else 0
    for path in stale:
        path.write_text(FILES[path]())
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
