# Two commands matter: `make run` (the whole stack) and `make test` (every test).
# `make help` lists the others.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT_INSTALL := $(SUDO) apt-get install -y -q --no-install-recommends

.PHONY: help run test test-fast setup check lint format types imports request-path generate migrations-check \
	lint-playbooks browser test-hosts postgres promtool wrk token clean \
	bench-api bench-models bench-overhead evaluate adopt-evaluation experiment \
	step-load replay decisions request-cost cluster-bench abuse bench-batching

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

# The tests that lean on the database (constraints, the partial unique index, JSON fields,
# connections under Celery and Channels), run again on a throwaway PostgreSQL cluster.
POSTGRES_TESTS := tests/api tests/market tests/workers tests/webui \
	tests/integration/test_model_registry.py tests/integration/test_identical_requests_elect_one_leader.py \
	tests/integration/test_lost_requests.py tests/integration/test_prediction_end_to_end.py
# Each test file runs whole in one of TEST_PROCESSES pytest-xdist processes; every process
# starts its own Redis, database and Celery worker, so they share nothing but the machine.
# Files go out in the suite's order (the long ones first; tests/conftest.py), not by size.
TEST_PROCESSES ?= 2
PARALLEL := -n $(TEST_PROCESSES) --dist loadfile --no-loadscope-reorder
test: setup browser test-hosts postgres promtool check  ## every test (SQLite), then the database-heavy ones on PostgreSQL
	$(PY) -m pytest $(PARALLEL)
	TEST_DATABASE=postgres $(PY) -m pytest $(PARALLEL) -m "not browser" $(POSTGRES_TESTS)

test-fast: setup  ## the tests without a browser, worker processes or test hosts (under 2 minutes)
	$(PY) -m pytest $(PARALLEL) -m "not browser and not integration" \
		--ignore=tests/provisioning/test_provisioning_on_test_hosts.py

check: lint types imports migrations-check lint-playbooks  ## every static check test runs first
	$(PY) -m devstack.render --check

lint: setup  ## ruff: lint rules and formatting
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

format: setup  ## apply ruff's formatting and fixes
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .

types: setup  ## mypy with the Django and DRF plugins (strict on predictions/forecasting)
	$(PY) -m mypy

imports: setup  ## import-linter: the layers and rules of docs/architecture.md
	$(VENV)/bin/lint-imports

request-path: setup  ## one REST prediction traced: the modules it enters, its returns to one it left, climbs up a layer
	$(PY) -m pytest tests/architecture/test_a_rest_predictions_path_never_climbs_a_layer.py -q -s -p no:cacheprovider

generate: setup  ## rewrite docker-compose.yml, the Dockerfile and the playbooks' commands from launch/process_catalog.py
	$(PY) -m devstack.render

migrations-check: setup
	$(PY) manage.py makemigrations --check --dry-run

PLAYBOOKS := site.yml add_worker.yml remove_worker.yml status.yml scheduler.yml monitoring.yml
lint-playbooks: setup  ## ansible-lint (production profile, offline) and --syntax-check
	cd playbooks && PATH="$(abspath $(VENV))/bin:$$PATH" ansible-lint --offline
	cd playbooks && PATH="$(abspath $(VENV))/bin:$$PATH" ansible-playbook --syntax-check $(PLAYBOOKS)

browser:  ## Debian's Chromium for the browser tests (Playwright drives it; no browser download)
	@command -v chromium >/dev/null 2>&1 || { $(SUDO) apt-get update -q && $(APT_INSTALL) chromium; }

postgres:  ## Debian's postgresql, for the tests' throwaway cluster (nothing is left running)
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 || \
		{ $(SUDO) apt-get update -q && $(APT_INSTALL) postgresql; }

promtool:  ## Debian's prometheus package, for promtool: the alert rules' checks and unit tests
	@command -v promtool >/dev/null 2>&1 || { $(SUDO) apt-get update -q && $(APT_INSTALL) prometheus; }

test-hosts:  ## Debian's openssh-server: the provisioning test runs an sshd in each test host
	@[ -x /usr/sbin/sshd ] || { $(SUDO) apt-get update -q && $(APT_INSTALL) openssh-server; }

wrk:  ## Debian's wrk, for make bench-api
	@command -v wrk >/dev/null 2>&1 || { $(SUDO) apt-get update -q && $(APT_INSTALL) wrk; }

token: setup  ## make token USER=alice: an API token for that user
	$(PY) manage.py create_api_token $(USER)

bench-api: setup wrk  ## the serving hot path against a bare Django view and a bare Celery chord
	$(PY) -m loadtests.bench_api $(BENCH_API_ARGS)

step-load: setup  ## low, high, low arrivals with autoscaling off and on: p95, queue wait, worker-seconds
	$(PY) -m loadtests.step_load $(STEP_LOAD_ARGS)

request-cost: setup postgres  ## what one cached, warm and cold request costs Redis and the database (--database postgres: PostgreSQL)
	$(PY) -m loadtests.request_cost $(REQUEST_COST_ARGS)

cluster-bench: setup test-hosts postgres  ## cold and warm predictions/s that k = 1, 2, 4 worker hosts (namespaces, a CPU-quota slice each) sustain
	$(PY) -m loadtests.cluster_bench $(CLUSTER_BENCH_ARGS)

replay: setup  ## a year of the offline market through the real stack: forecasts of record, live coverage, bar -> forecast, the decisions' error rates
	$(PY) -m loadtests.market_replay $(REPLAY_ARGS)

decisions: setup  ## the shadow judge's and model health's error rates on years of the models' real daily errors
	$(PY) -m benchmarks.decisions

abuse: setup  ## well-behaved clients with and without abusive ones beside them: answers, 5xx, p95, Redis memory, rows/hour
	$(PY) -m loadtests.abuse $(ABUSE_ARGS)

bench-batching: setup  ## the per-symbol LSTM's inference batched against one window per call at a p99 objective
	$(PY) -m loadtests.bench_batching $(BENCH_BATCHING_ARGS)

bench-models: setup  ## every model on every offline symbol: train, warm start, predict, memory, skill
	$(PY) -m benchmarks.bench_models $(BENCH_MODELS_ARGS)

evaluate: setup  ## nested walk-forward evaluation: skill, bands, coverage, unsure; writes var/evaluation/ only
	$(PY) -m predictions.evaluation.evaluate $(EVALUATE_ARGS)

adopt-evaluation: setup  ## the service takes var/evaluation/'s run: calibration, scorecard, docs/evaluation
	$(PY) -m predictions.evaluation.evaluate --adopt $(or $(RUN),var/evaluation)

bench-overhead: setup  ## orchestration cost per request: no-op chord vs direct calls vs bare Celery chord
	$(PY) -m loadtests.bench_overhead $(BENCH_ARGS)

# The short default run (< 10 min): arrivals slower than one worker answers, so the latencies
# are the pipeline's, not a queue's; longer ones: make experiment EXPERIMENT_ARGS="--rate 0.3 --duration 120"
EXPERIMENT_ARGS ?= --strategies centralized,chord,cascade --workers 1,2,6 --rate 0.1 \
	--duration 30 --drain 30 --warmup 1 --symbols AAPL,MSFT --max-minutes 9
experiment: setup  ## compare strategies and worker counts under load; report in loadtests/reports/
	$(PY) -m loadtests.experiment $(EXPERIMENT_ARGS)

clean:  ## remove test databases and caches
	rm -rf var/test-db*.sqlite3* .pytest_cache .mypy_cache
