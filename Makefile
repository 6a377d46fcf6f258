# Two commands matter: `make run` (the whole stack) and `make test` (every test).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run test setup browser lint check migrations-check token clean bench-models

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

check: lint migrations-check

test: setup browser check  ## every test, against a real Redis, Celery worker, database and browser
	$(PY) -m pytest

bench-models: setup  ## every model on every offline symbol: train, warm start, predict, memory, skill
	$(PY) -m benchmarks.models $(BENCH_MODELS_ARGS)

token: setup  ## make token USER=alice: an API token for that user
	$(PY) manage.py create_api_token $(USER)

clean:
	rm -rf var/test-db.sqlite3* .pytest_cache
