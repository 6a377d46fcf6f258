"""The suite's own PostgreSQL: started from Debian's package into a temporary directory on
a free loopback port, usable at once, and gone (process and files) after stop."""

from __future__ import annotations

import psycopg

from devstack.postgres import ThrowawayPostgres


def test_it_starts_answers_and_leaves_nothing_behind():
    cluster = ThrowawayPostgres().start()
    try:
        with psycopg.connect(cluster.url) as conn:
            assert conn.execute("SELECT current_database()").fetchone() == ("stockserve",)
            address = conn.execute("SELECT inet_server_addr()::text").fetchone()[0]
            assert address.startswith("127.0.0.1")
    finally:
        cluster.stop()
    assert not cluster.dir.exists()
