"""A web process answers a cached question from its memory, without a Redis round trip,
and never once Redis's copy has changed: a newer answer, a revoked token, a lost
connection. Its askers are counted from leased blocks of their windows, never past the
limit."""

from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token

from api import hotpath
from api.answer_memory import TrackedMemory
from plumbing.redis_client import get_redis
from predictions import answer_cache
from predictions.models import PredictionRequest
from predictions.rate_leases import IDLE_SECONDS, Leases
from predictions.rate_limits import Rate, window_key
from tests.support import wsgi
from tests.support.api import finished_prediction

URL = "/api/v1/predictions/"
QUESTION = {"symbol": "AAPL", "horizon": 5}
pytestmark = [pytest.mark.django_db]


@pytest.fixture
def round_trips(monkeypatch):
    """The answer script's calls, made for real and counted (the fast path's only trip)."""
    calls: list[list[str]] = []
    real = hotpath.run_answer_script

    def counted(keys, argv):
        calls.append(keys)
        return real(keys, argv)

    monkeypatch.setattr(hotpath, "run_answer_script", counted)
    return calls


@pytest.fixture
def answered(api_client):
    done = finished_prediction("AAPL", 5)
    assert api_client.post(URL, QUESTION, format="json").status_code == 200  # stores it
    return done


def tracking() -> None:
    """This process's memory with tracking on (the upkeep thread does it within a second;
    the test does not wait for it)."""
    held = hotpath.this_process()
    assert held is not None
    held.memory.upkeep()
    assert held.memory.current() is not None, "Redis refused to track"


def test_a_second_ask_is_answered_from_memory(answered, round_trips):
    tracking()
    first = wsgi.call("POST", URL, QUESTION)
    again = [wsgi.call("POST", URL, QUESTION) for _ in range(5)]
    assert first.status == 200 and "Allow" not in first.headers
    assert [r.status for r in again] == [200] * 5
    assert all(r.body == first.body for r in again)
    assert len(round_trips) == 1  # the first read Redis; the rest were the memory's


def test_a_newer_answer_is_served_the_moment_redis_has_it(answered, round_trips):
    tracking()
    old = wsgi.call("POST", URL, QUESTION)
    new = finished_prediction("AAPL", 5)
    answer_cache.supersede("AAPL", 5, new.finished_at.timestamp())  # as the worker does
    renewed = wsgi.call("POST", URL, QUESTION)  # the full path renders and stores it
    assert renewed.status == 200 and renewed.json()["id"] == str(new.id)
    assert old.json()["id"] == str(answered.id)
    fast = wsgi.call("POST", URL, QUESTION)
    assert fast.json()["id"] == str(new.id) and "Allow" not in fast.headers


def test_a_revoked_token_is_refused_though_its_user_was_in_memory(answered, round_trips):
    tracking()
    user = PredictionRequest._meta.get_field("user").related_model.objects.create_user("bot")
    token = Token.objects.create(user=user)
    auth = {"Authorization": f"Token {token.key}"}
    assert wsgi.call("POST", URL, QUESTION, headers=auth).headers.get("Allow")  # DRF checks
    for _ in range(3):
        assert "Allow" not in wsgi.call("POST", URL, QUESTION, headers=auth).headers
    assert len(round_trips) == 2  # once to learn the user, then the memory's
    token.delete()
    assert wsgi.call("POST", URL, QUESTION, headers=auth).status == 401


def test_a_lost_tracking_connection_empties_the_memory(answered, round_trips):
    tracking()
    assert wsgi.call("POST", URL, QUESTION).status == 200
    get_redis().client_kill_filter(_type="normal", skipme=True)  # tracking's connection too
    assert wsgi.call("POST", URL, QUESTION).status == 200
    assert len(round_trips) == 2  # not from memory: Redis may have changed unseen
    assert hotpath.this_process().memory.current() is None  # until upkeep tracks again
    tracking()
    wsgi.call("POST", URL, QUESTION)
    assert wsgi.call("POST", URL, QUESTION).status == 200
    assert len(round_trips) == 3  # refilled once, then the memory's


def test_with_the_memory_off_every_answer_reads_redis(answered, round_trips, settings):
    settings.ANSWER_MEMORY = False
    for _ in range(3):
        assert wsgi.call("POST", URL, QUESTION).status == 200
    assert len(round_trips) == 3


def test_an_entry_ends_when_redis_would_expire_it():
    memory = TrackedMemory(get_redis(), ("test-memory:",))
    memory.upkeep()
    epoch = memory.current()
    assert epoch is not None
    memory.keep("test-memory:lasting", b"a", 60_000, epoch)
    memory.keep("test-memory:ended", b"b", 0, epoch)
    memory.keep("test-memory:gone", b"c", -2, epoch)
    assert memory.get("test-memory:lasting") == b"a"
    assert memory.get("test-memory:ended") is None and memory.get("test-memory:gone") is None
    get_redis().set("test-memory:lasting", "changed")
    memory.current()
    assert memory.get("test-memory:lasting") is None
    memory.keep("test-memory:lasting", b"stale", 60_000, epoch)  # read before the change
    assert memory.get("test-memory:lasting") is None
    memory.close()
    get_redis().delete("test-memory:lasting")


def test_leased_counts_never_pass_the_limit_and_idle_ones_go_back():
    rate, counter = Rate(limit=20, period=60), window_key("anon", "lease-test", Rate(20, 60))
    get_redis().delete(counter)
    one, other = Leases(get_redis()), Leases(get_redis())
    allowed = [one.spend(counter, rate) is None for _ in range(15)]
    allowed += [other.spend(counter, rate) is None for _ in range(15)]
    assert sum(allowed) <= rate.limit and all(allowed[:15])
    assert int(get_redis().get(counter)) == rate.limit  # never past it
    held_by_one = rate.limit - sum(allowed)
    refused = other.spend(counter, rate)
    assert refused is not None and 1 <= refused <= 60
    for lease in one.held.values():
        lease.used_at -= IDLE_SECONDS  # as if a second had passed without a request
    one.give_back_idle()
    assert int(get_redis().get(counter)) == rate.limit - held_by_one
    assert sum(other.spend(counter, rate) is None for _ in range(25)) == held_by_one
    get_redis().delete(counter)
