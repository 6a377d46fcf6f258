"""A request's cost is counter arithmetic (growth over a window, less the idle rate, per
request) and, for PostgreSQL, a pgbench script with the service's transactions: pure, so
checked here without a server."""

from __future__ import annotations

import pytest

from loadtests.cpu import stat_cpu_seconds
from loadtests.request_cost import (
    Source,
    Statement,
    by_kind,
    cold_script,
    kind,
    per_request,
    pgbench_tps,
    short,
    statement_deltas,
    without_idle,
    write_commits,
)


def test_each_counter_grows_by_its_difference_divided_by_the_requests():
    before = {"xact_commit": 100.0, "tup_inserted": 40.0}
    after = {"xact_commit": 130.0, "tup_inserted": 40.0, "wal_sync": 6.0}
    assert per_request(before, after, 3) == {
        "xact_commit": 10.0,
        "tup_inserted": 0.0,
        "wal_sync": 2.0,  # not there before: counted from zero
    }


def test_a_counter_that_went_backwards_means_a_reset_and_is_refused():
    with pytest.raises(ValueError, match="xact_commit"):
        per_request({"xact_commit": 10.0}, {"xact_commit": 4.0}, 1)


def test_a_window_without_requests_is_refused():
    with pytest.raises(ValueError):
        per_request({}, {"xact_commit": 1.0}, 0)
    with pytest.raises(ValueError):
        statement_deltas({}, {}, 0)


def test_statements_keep_only_those_run_in_the_window_most_called_first():
    before = {1: Statement("SELECT $1", 10, 10), 2: Statement("COMMIT", 5, 0)}
    after = {
        1: Statement("SELECT $1", 16, 16),
        2: Statement("COMMIT", 5, 0),  # not run in the window
        3: Statement("INSERT INTO t VALUES ($1)", 2, 2),  # new in the window
    }
    assert statement_deltas(before, after, 2) == [
        Statement("SELECT $1", 3.0, 3.0),
        Statement("INSERT INTO t VALUES ($1)", 1.0, 1.0),
    ]


def test_statements_are_sorted_by_kind_and_transaction_control_is_one_kind():
    assert kind("  SELECT 1") == "SELECT"
    assert kind("(SELECT 1) UNION (SELECT 2)") == "SELECT"
    assert kind("insert into t values (1)") == "INSERT"
    assert kind('SAVEPOINT "s1_x1"') == "transaction"
    assert kind('RELEASE SAVEPOINT "s1_x1"') == "transaction"
    assert kind("BEGIN") == kind("COMMIT") == "transaction"
    assert kind("CREATE TABLE t (a int)") == "other"
    assert kind("") == "other"


def test_the_server_s_own_foreign_key_checks_are_told_apart_from_the_service_s_selects():
    check = (
        'SELECT $2 FROM ONLY "public"."t" x WHERE "id" OPERATOR(pg_catalog.=) $1 FOR KEY SHARE OF x'
    )
    assert kind(check) == "fk_check"


def test_calls_and_rows_add_up_per_kind():
    statements = [
        Statement("SELECT a FROM t", 3.0, 6.0),
        Statement("SELECT 1", 1.0, 1.0),
        Statement("UPDATE t SET a = 1", 1.0, 2.0),
        Statement("BEGIN", 2.0, 0.0),
    ]
    assert by_kind(statements) == {
        "SELECT": 4.0,
        "SELECT_rows": 7.0,
        "UPDATE": 1.0,
        "UPDATE_rows": 2.0,
        "transaction": 2.0,
        "transaction_rows": 0.0,
    }


def test_cpu_counts_the_process_and_its_reaped_children_even_with_spaces_in_its_name():
    stat = "4242 (postgres: postgres stockserve 127.0.0.1(5) idle) S 1 4242 4242 0 -1 " + " ".join(
        ["4194560", "10", "0", "0", "0", "150", "50", "30", "20"] + ["0"] * 30
    )
    assert stat_cpu_seconds(stat, 100) == pytest.approx(2.5)  # (150 + 50 + 30 + 20) ticks


def test_pgbench_s_rate_is_read_from_its_summary():
    out = "latency average = 40.3 ms\ntps = 24.812 (without initial connection time)\n"
    assert pgbench_tps(out) == pytest.approx(24.812)
    with pytest.raises(ValueError):
        pgbench_tps("pgbench: error: connection failed\n")


COLUMNS = {
    "predictions_predictionrequest": ["id", "symbol", "status", "result", "created_at"],
    "predictions_modelgeneration": ["id", "symbol", "model", "generation", "state", "metrics"],
    "predictions_generationevent": ["id", "symbol", "created_at"],
    "predictions_storedrun": ["id", "generation_id", "run", "created_at"],
    "predictions_forecastrecord": ["id", "symbol", "prediction_id", "path", "recorded_at"],
}


def test_the_script_commits_what_a_cold_request_commits():
    source = Source("0cd8f9af-538e-4537-9d28-2c17157cd8ca", ((1, 4, 7), (2, 5, 8), (3, 6, 9)), 11)
    script = cold_script(COLUMNS, source)
    # the request, running, its data; per model a generation, an event, a stored run;
    # the answer and the forecast of record
    assert write_commits(script) == 3 + 3 * 3 + 2
    assert script.count("INSERT INTO predictions_storedrun") == 3
    assert script.count("RETURNING id AS generation_id \\gset") == 3
    assert (
        "(generation_id, run, created_at) SELECT :generation_id, run::text::jsonb, now()" in script
    )
    assert "FROM predictions_storedrun WHERE id = 6;" in script


def test_the_script_copies_payloads_re_encoded_and_lets_the_server_number_new_rows():
    source = Source("0cd8f9af-538e-4537-9d28-2c17157cd8ca", ((1, 4, 7),), None)
    script = cold_script(COLUMNS, source)
    assert "INSERT INTO predictions_modelgeneration (symbol, model, generation, state," in script
    assert "state || ''::bytea, metrics::text::jsonb" in script  # compressed again
    assert "INSERT INTO predictions_predictionrequest (id, symbol," in script  # a new uuid
    assert "md5(:client_id || '-' || :r)::uuid" in script
    assert "predictions_forecastrecord" not in script  # no record to copy
    assert write_commits(script) == 3 + 3 + 1


def test_a_long_statement_is_shown_with_its_column_lists_elided():
    select = 'SELECT "t"."a", "t"."b", "t"."c", "t"."d", "t"."e", "t"."f", "t"."g" FROM "t" WHERE x'
    assert short(select) == 'SELECT … FROM "t" WHERE x'
    insert = 'INSERT INTO "t" ("a", "b") VALUES ($1, $2) RETURNING "t"."id"'
    assert short(insert) == 'INSERT INTO "t" (…) VALUES (…) RETURNING "t"."id"'
    assert short("SELECT $1") == "SELECT $1"
    assert len(short("SELECT " + "x" * 500, width=40)) == 40


def test_a_generation_promoted_without_an_event_writes_none():
    """Shadow generations off: a generation serves as soon as it is trained, no event."""
    source = Source("0cd8f9af-538e-4537-9d28-2c17157cd8ca", ((1, 4, 7), (2, 5, None)), None)
    script = cold_script(COLUMNS, source)
    assert script.count("INSERT INTO predictions_generationevent") == 1
    assert script.count("INSERT INTO predictions_storedrun") == 2
    assert write_commits(script) == 3 + 3 + 2 + 1


def test_a_steps_redis_figures_have_the_idle_rate_taken_off():
    before = {"cmd:get": 10.0, "cpu_s": 1.0, "bytes_in": 100.0}
    after = {"cmd:get": 40.0, "cpu_s": 1.5, "bytes_in": 700.0}
    idle = {"cmd:get": 2.0, "cpu_s": 0.05, "bytes_in": 20.0}  # per second
    per_request = without_idle(before, after, idle, seconds=5.0, n=4)
    assert per_request == {"cmd:get": 5.0, "cpu_s": pytest.approx(0.0625), "bytes_in": 125.0}
    assert without_idle(before, before, idle, 5.0, 4)["cmd:get"] == 0.0  # never < 0
