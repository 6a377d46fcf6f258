"""A request's cost is counter arithmetic (growth over a window, less the idle rate, per
request) and the reading of PostgreSQL's statistics: pure, so checked here without a server."""

from __future__ import annotations

import pytest

from lab.cpu import stat_cpu_seconds
from lab.request_cost import (
    Statement,
    by_kind,
    kind,
    per_request,
    short,
    statement_deltas,
    without_idle,
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


def test_a_long_statement_is_shown_with_its_column_lists_elided():
    select = 'SELECT "t"."a", "t"."b", "t"."c", "t"."d", "t"."e", "t"."f", "t"."g" FROM "t" WHERE x'
    assert short(select) == 'SELECT … FROM "t" WHERE x'
    insert = 'INSERT INTO "t" ("a", "b") VALUES ($1, $2) RETURNING "t"."id"'
    assert short(insert) == 'INSERT INTO "t" (…) VALUES (…) RETURNING "t"."id"'
    assert short("SELECT $1") == "SELECT $1"
    assert len(short("SELECT " + "x" * 500, width=40)) == 40


def test_a_steps_redis_figures_have_the_idle_rate_taken_off():
    before = {"cmd:get": 10.0, "cpu_s": 1.0, "bytes_in": 100.0}
    after = {"cmd:get": 40.0, "cpu_s": 1.5, "bytes_in": 700.0}
    idle = {"cmd:get": 2.0, "cpu_s": 0.05, "bytes_in": 20.0}  # per second
    per_request = without_idle(before, after, idle, seconds=5.0, n=4)
    assert per_request == {"cmd:get": 5.0, "cpu_s": pytest.approx(0.0625), "bytes_in": 125.0}
    assert without_idle(before, before, idle, 5.0, 4)["cmd:get"] == 0.0  # never < 0
