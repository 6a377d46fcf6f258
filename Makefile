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

# The tests that lean on the database (constraints, the partial unique index, JSON fields,
# connections under Celery and Channels), run again on a throwaway PostgreSQL cluster.
POSTGRES_TESTS := \
	tests/api/test_a_client_behind_the_proxy_is_the_address_num_proxies_trusts.py \
	tests/api/test_a_newer_prediction_replaces_the_cached_answer.py \
	tests/api/test_a_query_parameter_given_twice_is_a_400.py \
	tests/api/test_an_anonymous_ipv6_client_shares_places_as_its_48.py \
	tests/api/test_an_answer_leads_with_the_band_and_says_what_the_path_is.py \
	tests/api/test_an_ipv6_client_is_one_client_per_64.py \
	tests/api/test_an_undecodable_body_is_a_400_with_a_sentence.py \
	tests/api/test_an_unreachable_redis_is_a_503_not_a_500.py \
	tests/api/test_fresh_runs_need_an_account.py \
	tests/api/test_hostile_bodies_and_a_broker_outage_get_a_clear_answer.py \
	tests/api/test_it_rate_limits_in_fixed_windows.py \
	tests/api/test_only_staff_change_which_generation_serves.py \
	tests/api/test_only_staff_see_who_changed_a_generation.py \
	tests/api/test_schema.py \
	tests/api/test_submit_validation.py \
	tests/api/test_symbols.py \
	tests/api/test_tfserving_answers_from_the_cache.py \
	tests/api/test_the_fast_path_answers_before_django.py \
	tests/api/test_token_guessing_and_revocation.py \
	tests/api/test_tokens_expire.py \
	tests/api/test_wait_slots_are_shared_fairly_among_the_clients_waiting.py \
	tests/api/test_wait_slots_keep_anonymous_clients_to_their_pool.py \
	tests/api/test_waiting_clients_are_capped.py \
	tests/api/test_who_may_read_a_prediction.py \
	tests/market/test_a_new_day_leaves_no_stale_answer_in_the_database.py \
	tests/market/test_a_new_day_refreshes_the_watchlist_ahead_of_the_askers.py \
	tests/market/test_an_unfinished_session_is_neither_an_origin_nor_a_score.py \
	tests/market/test_forecasts_of_record_are_scored_once_when_their_days_come.py \
	tests/market/test_splits_and_dividends_are_not_forecast_error.py \
	tests/market/test_the_track_record_is_cached_until_its_records_change.py \
	tests/market/test_the_track_record_page.py \
	tests/market/test_the_watchlist_refreshes_what_is_stale_and_takes_its_share.py \
	tests/marketdata/test_a_clock_step_reaches_followers_through_the_relay.py \
	tests/marketdata/test_followers_hear_new_bars_and_forecasts.py \
	tests/predictions/test_a_cached_answer_is_the_prediction_that_answers_it.py \
	tests/predictions/test_a_clients_later_pipelines_queue_behind_every_clients_first.py \
	tests/predictions/test_a_hung_forward_pass_fails_its_model_at_the_stage_soft_limit.py \
	tests/predictions/test_a_model_hangs_on_purpose_only_in_a_replay.py \
	tests/predictions/test_a_replay_inside_the_evaluated_days_is_flagged.py \
	tests/predictions/test_admission_control.py \
	tests/predictions/test_admission_places_are_shared_fairly_among_the_clients_asking.py \
	tests/predictions/test_an_identified_client_joining_a_spare_lane_request_moves_it_to_the_usual_lane.py \
	tests/predictions/test_anonymous_and_background_questions_take_the_spare_lane.py \
	tests/predictions/test_anonymous_clients_share_one_capped_pool.py \
	tests/predictions/test_best_effort_events_hide_only_redis_errors.py \
	tests/predictions/test_every_entry_point_asks_the_one_gate.py \
	tests/predictions/test_finished_requests_are_pruned_after_their_retention.py \
	tests/predictions/test_identical_requests_elect_one_leader.py \
	tests/predictions/test_joins_are_counted_against_the_client.py \
	tests/predictions/test_lost_requests.py \
	tests/predictions/test_prediction_end_to_end.py \
	tests/predictions/test_request_events.py \
	tests/predictions/test_the_latency_objective_reads_the_parts_the_header_tasks_recorded.py \
	tests/registry/test_a_database_from_before_the_move_keeps_every_row.py \
	tests/registry/test_model_health_demotes_a_model_that_goes_bad.py \
	tests/registry/test_model_health_reads_sigma_from_the_served_band.py \
	tests/registry/test_model_health_says_when_the_band_itself_is_off.py \
	tests/registry/test_model_registry.py \
	tests/streams/test_a_market_reader_can_read_the_market_streams_and_nothing_else.py \
	tests/webui \
	tests/workers/test_a_worker_keeps_its_database_connection_between_tasks.py \
	tests/workers/test_pool_processes_are_replaced_by_memory_not_by_task_count.py
# Each test file runs whole in one of TEST_PROCESSES pytest-xdist processes; every process
# starts its own Redis, database and Celery worker, so they share nothing but the machine.
# Files go out in the suite's order (the long ones first; tests/conftest.py), not by size.
# Three on two cores: the tests wait on processes they start, and a third process fills
# that idle time (the fresh-clone CI, 2026-11-27: 710 s with two, 610-655 s with three).
TEST_PROCESSES ?= 3
PARALLEL := -n $(TEST_PROCESSES) --dist loadfile --no-loadscope-reorder
test: setup packages check  ## every test (SQLite, the lab's included), then the database-heavy ones on PostgreSQL
	$(PY) -m pytest $(PARALLEL)
	TEST_DATABASE=postgres $(PY) -m pytest $(PARALLEL) -m "not browser" $(POSTGRES_TESTS)

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
