"""The open-loop runner keeps sending at its rate while earlier requests are unanswered.

The local server below holds every submission until all of them have arrived: a closed-loop
client (send, wait, send) could never get an answer from it; an open-loop one gets all.
"""

from __future__ import annotations

import json
import random
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from loadtests import engine
from loadtests.rawlog import Row
from loadtests.workload import Workload, parse_mix

ARRIVALS = 6


class HoldingServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.all_arrived = threading.Barrier(ARRIVALS, timeout=20)
        self.bodies: list[dict] = []


class Handler(BaseHTTPRequestHandler):
    server: HoldingServer

    def log_message(self, *args: object) -> None:
        pass

    def _answer(self, code: int, body: dict) -> None:
        payload = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.bodies.append(body)
        index = self.server.all_arrived.wait()  # blocks until every arrival is in flight
        self._answer(202, {"id": f"00000000-0000-0000-0000-{index:012d}", "status": "queued"})

    def do_GET(self) -> None:
        self._answer(200, {"status": "done"})


@pytest.fixture
def server():
    server = HoldingServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_every_arrival_is_sent_while_the_earlier_ones_wait(server):
    workload = Workload(parse_mix("AAPL:3,MSFT"), horizon=3, strategy="chord", cold=True)
    url = f"http://127.0.0.1:{server.server_address[1]}"
    arrivals = engine.predictions(workload, engine.steady(20, ARRIVALS / 20), random.Random(0))
    rows: list[Row] = []
    info = engine.run(url, arrivals, rows.append, drain_s=30)

    assert info["arrivals"] == ARRIVALS and info["unfinished"] == 0 and info["dropped"] == 0
    assert info["peak_in_flight"] == ARRIVALS
    assert len(rows) == ARRIVALS and all(r.ok and r.status == "done" for r in rows)
    assert len({r.prediction_id for r in rows}) == ARRIVALS
    assert all(b["use_cache"] is False and b["warm_start"] is False for b in server.bodies)
    assert {b["symbol"] for b in server.bodies} <= {"AAPL", "MSFT"}


def test_arrivals_are_scheduled_in_advance():
    assert engine.steady(4, 1.0) == [0.0, 0.25, 0.5, 0.75]
    poisson = engine.steady(50, 2.0, poisson=True, rng=random.Random(0))
    assert all(0 < t < 2.0 for t in poisson) and poisson == sorted(poisson)
    assert engine.steps([(2, 1.0), (4, 0.5)]) == [0.0, 0.5, 1.0, 1.25]
