"""The open-loop generator keeps its schedule and counts waiting for a connection as latency."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from loadtests import engine
from loadtests.rawlog import Row

HOLD_S = 0.2


class SlowHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        self.rfile.read(int(self.headers["Content-Length"]))
        time.sleep(HOLD_S)
        body = b'{"ok": true}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def slow_server() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), SlowHandler)  # one request at a time
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/"
    server.shutdown()
    server.server_close()


def test_latency_counts_from_the_scheduled_send_time(slow_server):
    # 10 requests scheduled over 0.5 s on one connection, each answered in 0.2 s: they
    # queue, so the last one ends ~2 s after the start though it was due at 0.45 s.
    job = engine.one_request("POST", "/", b"{}")
    arrivals = [engine.Arrival(at, "http", "slow", job) for at in engine.steady(20, 0.5)]
    rows: list[Row] = []
    info = engine.run(slow_server, arrivals, rows.append, drain_s=10, connections=1)
    assert info["arrivals"] == 10 and info["dropped"] == 0 and info["unfinished"] == 0
    assert [r.status for r in rows] == ["200"] * 10 and all(r.ok for r in rows)
    latencies = sorted(r.latency_ms for r in rows)
    assert latencies[0] >= HOLD_S * 1000 * 0.9
    assert latencies[-1] >= (10 * HOLD_S - 0.45) * 1000 * 0.9  # the queueing is in it
