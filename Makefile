# Two commands matter: `make run` (the whole stack) and `make test` (every test).
# `make help` lists the others; the measurements are the lab's: `make -C lab help`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT_INSTALL := $(SUDO) apt-get install -y -q --no-install-recommends

.PHONY: help setup run test test-fast check lint format generate token packages \
	evaluate adopt-evaluation experiment compose-check clean

help:  ## this list
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-18s %s\n", $$1, $$2}'

$(STAMP): requirements.txt requirements-dev.txt clients/python/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $(STAMP)

setup: $(STAMP)  ## the virtualenv with the pinned requirements

run: setup  ## start Redis (unless REDIS_URL is set), web, workers, beat; Ctrl-C stops all
	$(PY) -m devstack

# Each test file runs whole in one of TEST_PROCESSES pytest-xdist processes; every process
# starts its own Redis, database and Celery worker, so they share nothing but the machine.
# Files go out in the suite's order (the long ones first; tests/conftest.py), not by size.
# Three on two cores: the tests wait on processes they start, and a third process fills
# that idle time (the fresh-clone CI, 2026-11-27: 710 s with two, 610-655 s with three).
TEST_PROCESSES ?= 3
PARALLEL := -n $(TEST_PROCESSES) --dist loadfile --no-loadscope-reorder
# The tests marked `postgres` lean on the database (constraints, the partial unique index,
# JSON fields, connections under Celery and Channels): they run again on a throwaway
# PostgreSQL cluster.
test: setup packages check  ## every test (SQLite, the lab's included), then the database-heavy ones on PostgreSQL
	$(PY) -m pytest $(PARALLEL)
	TEST_DATABASE=postgres $(PY) -m pytest $(PARALLEL) -m "postgres and not browser"

test-fast: setup  ## the tests without a browser, worker processes or test hosts (under 2 minutes)
	$(PY) -m pytest $(PARALLEL) -m "not browser and not integration" \
		--ignore=tests/provisioning/test_provisioning_on_test_hosts.py

PLAYBOOKS := site.yml add_worker.yml remove_worker.yml status.yml scheduler.yml monitoring.yml
check: lint  ## every static check (make test runs it first): ruff, mypy, import-linter, migrations, playbooks, generated files
	$(PY) -m mypy
	$(VENV)/bin/lint-imports
	$(PY) manage.py makemigrations --check --dry-run
	cd playbooks && PATH="$(abspath $(VENV))/bin:$$PATH" ansible-lint --offline
	cd playbooks && PATH="$(abspath $(VENV))/bin:$$PATH" ansible-playbook --syntax-check $(PLAYBOOKS)
	$(PY) -m devstack.render --check

lint: setup  ## ruff: lint rules and formatting
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

format: setup  ## apply ruff's formatting and fixes
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .

generate: setup  ## rewrite docker-compose.yml, the Dockerfile and the playbooks' commands from launch/process_catalog.py
	$(PY) -m devstack.render

token: setup  ## make token USER=alice: an API token for that user
	$(PY) manage.py create_api_token $(USER)

# Debian's packages the tests use, each installed only when missing: chromium (Playwright
# drives it; no browser download), openssh-server (an sshd in each test host), postgresql
# (the tests' throwaway cluster; nothing is left running), prometheus (promtool) and
# docker-compose (its `config` checks docker-compose.yml against the compose
# specification's schema, no daemon needed).
packages:  ## Debian's chromium, openssh-server, postgresql, prometheus and docker-compose, where missing
	@command -v chromium >/dev/null 2>&1 || { $(SUDO) apt-get update -q && $(APT_INSTALL) chromium; }
	@[ -x /usr/sbin/sshd ] || { $(SUDO) apt-get update -q && $(APT_INSTALL) openssh-server; }
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 || \
		{ $(SUDO) apt-get update -q && $(APT_INSTALL) postgresql; }
	@command -v promtool >/dev/null 2>&1 || { $(SUDO) apt-get update -q && $(APT_INSTALL) prometheus; }
	@command -v docker-compose >/dev/null 2>&1 || { $(SUDO) apt-get update -q && $(APT_INSTALL) docker-compose; }

evaluate: setup  ## nested walk-forward evaluation: skill, bands, coverage, unsure; writes var/evaluation/ only
	$(PY) -m forecasting.evaluation.evaluate $(EVALUATE_ARGS)

adopt-evaluation: setup  ## the service takes var/evaluation/'s run: calibration, scorecard, docs/evaluation
	$(PY) -m forecasting.evaluation.evaluate --adopt $(or $(RUN),var/evaluation)

# The short default run (< 10 min): arrivals slower than one worker answers, so the latencies
# are the pipeline's, not a queue's; longer ones: make experiment EXPERIMENT_ARGS="--rate 0.3 --duration 120"
EXPERIMENT_ARGS ?= --strategies centralized,chord,cascade --workers 1,2,6 --rate 0.1 \
	--duration 30 --drain 30 --warmup 1 --symbols AAPL,MSFT --max-minutes 9
experiment: setup  ## compare strategies and worker counts under load; report in loadtests/reports/
	$(PY) -m loadtests.experiment $(EXPERIMENT_ARGS)

# Not part of `make test`: as root, it installs Docker from Debian's packages, starts a
# daemon if none answers, builds the images (stand-in bases from Debian's packages when no
# image registry answers), runs docker-compose.yml with the monitoring profile, checks it
# and takes it down with its volumes (docs/operating.md, "Running it with Docker").
compose-check: setup  ## build and run the Docker Compose stack for real, check it, take it down (root; ~25 min cold)
	$(PY) -m devstack.compose_check

clean:  ## remove test databases and caches
	rm -rf var/test-db*.sqlite3* .pytest_cache .mypy_cache
