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


def dockerfile() -> str:
    web = process_catalog.web("0.0.0.0:8000")
    return f"""# {GENERATED}
# One image for web and workers; docker-compose.yml chooses the command.
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt
COPY . .
RUN pip install --no-cache-dir ./clients/python
RUN useradd --create-home app && mkdir -p /app/var && chown -R app /app/var
USER app
EXPOSE 8000
CMD {_list(web)}
"""


MONITORING = "playbooks/roles/monitoring/files"
GRAFANA = "/etc/grafana/provisioning"


def _redis_command(maxmemory_mb: int, policy: str) -> str:
    """redis-server with an ACL file in its volume (the restricted users survive a restart;
    made empty on first start: Redis refuses a missing one), the catalog's persistence,
    memory rules and client bounds (the image is Redis 7); through the image's entrypoint,
    which drops root for the redis user."""
    flags = [
        *process_catalog.redis_persistence(),
        *process_catalog.redis_memory(maxmemory_mb, policy),
        *process_catalog.redis_clients(),
    ]
    shown = " ".join(shlex.quote(flag) for flag in flags)
    server = f"redis-server --aclfile /data/users.acl {shown}"
    script = f"touch /data/users.acl && exec docker-entrypoint.sh {server}"
    return json.dumps(["sh", "-c", script])


def compose() -> str:
    main_redis = _redis_command(
        process_catalog.REDIS_MAXMEMORY_MB, process_catalog.MAIN_REDIS_POLICY
    )
    queue_redis = _redis_command(
        process_catalog.QUEUE_REDIS_MAXMEMORY_MB, process_catalog.QUEUE_REDIS_POLICY
    )
    after_migrate = "depends_on: {migrate: {condition: service_completed_successfully}}"
    return f"""# {GENERATED}
# The stack with PostgreSQL and Redis: `docker compose up --build`, then open http://127.0.0.1:8000/
x-app: &app
  build: .
  restart: unless-stopped  # a process that exits is started again (migrate: "no")
  environment:
    DATABASE_URL: postgres://stockserve:stockserve@postgres:5432/stockserve
    REDIS_URL: redis://redis:6379/0
    QUEUE_REDIS_URL: redis://queue-redis:6379/0
    SECRET_KEY: ${{SECRET_KEY:-change-me-in-production}}
    METRICS_TOKEN: ${{METRICS_TOKEN:-change-me-metrics-token}}
    ALLOWED_HOSTS: 127.0.0.1,localhost,web
    PRICE_PROVIDERS: ${{PRICE_PROVIDERS:-yfinance,sample}}
    X_BEARER_TOKEN: ${{X_BEARER_TOKEN:-}}
  depends_on:
    redis: {{condition: service_healthy}}
    queue-redis: {{condition: service_healthy}}
    postgres: {{condition: service_healthy}}

services:
  redis:
    image: redis:7-alpine
    # An append-only file synced every second: a restart keeps the queues and results.
    # At most {process_catalog.REDIS_MAXMEMORY_MB} MB, then only keys with a TTL are evicted.
    # Each Redis: a command of at most {process_catalog.REDIS_MAX_COMMAND}, clients' \
buffers within {process_catalog.REDIS_CLIENTS_MEMORY} of maxmemory (docs/clients.md, "Bounds").
    command: {main_redis}
    volumes: ["redis-data:/data"]
    healthcheck: {{test: ["CMD", "redis-cli", "ping"], interval: 2s, retries: 30}}
  queue-redis:  # the stream clients' streams and users (docs/clients.md): full, it refuses
    image: redis:7-alpine
    command: {queue_redis}
    volumes: ["queue-redis-data:/data"]
    healthcheck: {{test: ["CMD", "redis-cli", "ping"], interval: 2s, retries: 30}}
  postgres:
    image: postgres:16-alpine
    environment:
      POSTGRES_USER: stockserve
      POSTGRES_PASSWORD: stockserve
      POSTGRES_DB: stockserve
    volumes: ["postgres-data:/var/lib/postgresql/data"]
    healthcheck: {{test: ["CMD", "pg_isready", "-U", "stockserve"], interval: 2s, retries: 30}}
  migrate:
    <<: *app
    command: {_list(process_catalog.migrate())}
    restart: "no"
  web:
    <<: *app
    command: {_list(process_catalog.web("0.0.0.0:8000"))}
    ports: ["127.0.0.1:8000:8000"]
    {after_migrate}
  worker-io:
    <<: *app
    command: {_list(process_catalog.worker("io", "io,scoring", 4))}
    {after_migrate}
  worker-cpu:
    <<: *app
    command: {_list(process_catalog.worker("cpu", "cpu", 2))}
    {after_migrate}
  worker-spare:  # anonymous and background questions (docs/operating.md, the spare lane)
    <<: *app
    command: {_list(process_catalog.spare_worker("spare", 2))}
    # Its niceness counts only inside its container; between containers the CPU weight
    # does: 110 of the others' 1024 is a nice-10 process's weight against a nice-0 one's.
    cpu_shares: 110
    {after_migrate}
  beat:
    <<: *app
    command: {_list(process_catalog.beat("/app/var/celerybeat-schedule"))}
    {after_migrate}
  ws:  # websockets of the live pages; pages find it at the web host, port 8001 (WS_PORT)
    <<: *app
    command: {_list(process_catalog.websocket("0.0.0.0", 8001))}
    ports: ["127.0.0.1:8001:8001"]
    {after_migrate}
  relay:
    <<: *app
    command: {_list(process_catalog.relay())}
    {after_migrate}
  sweeper:
    <<: *app
    command: {_list(process_catalog.sweeper())}
    {after_migrate}
  stream:  # the stream clients' consumer (clients/python)
    <<: *app
    command: {_list(process_catalog.stream_consumer())}
    {after_migrate}

  # `docker compose --profile monitoring up`: Prometheus with the alert rules on :9090,
  # Grafana with the dashboard on :3000 (the same files the monitoring playbook installs).
  prometheus:
    image: prom/prometheus:v2.53.2
    profiles: [monitoring]
    environment:
      METRICS_TOKEN: ${{METRICS_TOKEN:-change-me-metrics-token}}
    # The scrape token goes to a file only Prometheus reads, never into its config.
    entrypoint:
      - /bin/sh
      - -c
      - >-
        umask 077 && printf %s "$$METRICS_TOKEN" > /tmp/metrics_token &&
        exec /bin/prometheus --config.file=/etc/prometheus/prometheus.yml
    volumes:
      - ./{MONITORING}/prometheus-compose.yml:/etc/prometheus/prometheus.yml:ro
      - ./{MONITORING}/stockserve-rules.yml:/etc/prometheus/stockserve-rules.yml:ro
    ports: ["127.0.0.1:9090:9090"]
    depends_on: [web]
  grafana:
    image: grafana/grafana:11.2.0
    profiles: [monitoring]
    volumes:
      - ./{MONITORING}/grafana/datasource.yml:{GRAFANA}/datasources/stockserve.yml:ro
      - ./{MONITORING}/grafana/dashboards.yml:{GRAFANA}/dashboards/stockserve.yml:ro
      - ./{MONITORING}/stockserve-dashboard.json:/var/lib/grafana/dashboards/stockserve.json:ro
    ports: ["127.0.0.1:3000:3000"]
    depends_on: [prometheus]

volumes:
  redis-data:
  queue-redis-data:
  postgres-data:
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
