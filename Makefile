# Two commands matter: `make run` (the whole stack) and `make test` (every test).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run test setup browser lint check migrations-check token clean bench-models experiment bench-overhead bench-events test-hosts lint-playbooks

$(STAMP): requirements.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $(STAMP)

setup: $(STAMP)  ## virtualenv with the pinned requirements

browser:  ## Debian's Chromium for the browser tests (Playwright drives it; no browser download)
	@command -v chromium >/dev/null 2>&1 || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q --no-install-recommends chromium; }

run: setup  ## start Redis (if REDIS_URL is unset), web, workers and beat; Ctrl-C stops all
	$(PY) -m config.stack

lint: setup
	$(PY) -m ruff check .

migrations-check: setup
	$(PY) manage.py makemigrations --check --dry-run

test-hosts:  ## Debian's openssh-server: the provisioning test runs an sshd in each of its test hosts
	@[ -x /usr/sbin/sshd ] || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q --no-install-recommends openssh-server; }

PLAYBOOKS := site.yml add_worker.yml remove_worker.yml status.yml
lint-playbooks: setup  ## ansible-lint (production profile, offline) and --syntax-check of the playbooks
	cd playbooks && PATH="$(abspath $(VENV))/bin:$$PATH" ansible-lint --offline
	cd playbooks && PATH="$(abspath $(VENV))/bin:$$PATH" ansible-playbook --syntax-check $(PLAYBOOKS)

check: lint migrations-check lint-playbooks

test: setup browser test-hosts check  ## every test, against a real Redis, Celery worker, database and browser
	$(PY) -m pytest

# The short default run (< 10 min); longer ones: make experiment EXPERIMENT_ARGS="--users 10 --duration 60"
EXPERIMENT_ARGS ?= --strategies centralized,chord,cascade --workers 1,2,6 --users 1 --think 0,0 \
	--duration 20 --drain 30 --warmup 1 --symbols AAPL,MSFT --max-minutes 9
experiment: setup  ## compare strategies and worker counts under load; report in loadtests/reports/
	$(PY) -m loadtests.experiment $(EXPERIMENT_ARGS)

bench-overhead: setup  ## orchestration cost per request: no-op chord vs direct calls vs bare Celery chord
	$(PY) -m loadtests.bench_overhead $(BENCH_ARGS)

bench-events: setup browser  ## live-event cost per task and events/s a connected dashboard keeps up with
	$(PY) -m loadtests.bench_events $(BENCH_EVENTS_ARGS)

bench-models: setup  ## every model on every offline symbol: train, warm start, predict, memory, skill
	$(PY) -m benchmarks.models $(BENCH_MODELS_ARGS)

token: setup  ## make token USER=alice: an API token for that user
	$(PY) manage.py create_api_token $(USER)

clean:
	rm -rf var/test-db.sqlite3* .pytest_cache
