"""`make -C lab abuse`'s well-behaved REST client keeps to its share: never more questions in
flight than it was given, a POST refused at admission (503) or a `?wait=` poll refused
asked again, each refusal counted on its row, and the question still answered. Against a
small HTTP server of the test's own that refuses the first POST and the first poll."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from lab.abuse_clients import (
    ADMISSION_REFUSED,
    WAIT_REFUSED,
    refusals,
    rest_arrivals,
)
from loadtests import engine
from tests.support.waiting import eventually


class Service(BaseHTTPRequestHandler):
    lock = threading.Lock()
    posts = polls = in_flight = most_in_flight = 0
    release = threading.Event()

    def log_message(self, *args: object) -> None:
        pass

    def answer(self, code: int, body: dict[str, object]) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        with Service.lock:
            Service.posts += 1
            first = Service.posts == 1
        if first:
            self.answer(503, {"error": "busy"})
            return
        with Service.lock:
            Service.in_flight += 1
            Service.most_in_flight = max(Service.most_in_flight, Service.in_flight)
        self.answer(202, {"id": f"p{Service.posts}", "status": "queued"})

    def do_GET(self) -> None:
        with Service.lock:
            Service.polls += 1
            first = Service.polls == 1
        if first:
            self.answer(503, {"error": "every wait slot is taken"})
            return
        Service.release.wait(10)  # hold the answers so the questions pile up
        with Service.lock:
            Service.in_flight -= 1
        self.answer(200, {"id": self.path.split("/")[-2], "status": "done"})


@pytest.fixture
def service():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Service)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    Service.release.set()
    server.shutdown()


def test_two_at_once_refusals_asked_again_and_counted(service):
    rows = []
    arrivals = rest_arrivals(20.0, 0.3, "t0ken", ["AAPL"], [("MSFT", 7)], "192.0.2.10", 30.0,
                             fresh_every=100, in_flight=2)  # fmt: skip
    epoch = time.time() + 0.5
    every_one_due = epoch + max(a.at for a in arrivals)

    def answer_once_every_question_is_due() -> None:
        eventually(lambda: Service.in_flight >= 2 and time.time() > every_one_due, 20,
                   "every question due and two held by the service")  # fmt: skip
        Service.release.set()

    releaser = threading.Thread(target=answer_once_every_question_is_due, daemon=True)
    releaser.start()
    engine.run(service, arrivals, rows.append, drain_s=30.0, start_epoch=epoch)
    releaser.join(20)

    assert len(rows) == 6 and all(row.ok for row in rows), rows
    assert Service.most_in_flight == 2  # never more than its share
    counted = [refusals(row.error) for row in rows]
    assert sum(c.get(ADMISSION_REFUSED, 0) for c in counted) == 1
    assert sum(c.get(WAIT_REFUSED, 0) for c in counted) == 1
