"""A web process's `?wait` slots follow admission's pool rule: anonymous clients alone may
hold every slot; while an identified client holds or asks for one, all anonymous clients
together hold at most ADMISSION_ANONYMOUS_SHARE of them and count as one client in the
identified clients' shares. A slot is a thread, so nobody passes PREDICTION_MAX_WAITERS."""

from __future__ import annotations

from contextlib import ExitStack

import pytest

from api import wait_slots

pytestmark = pytest.mark.postgres


@pytest.fixture(autouse=True)
def _nobody_asked_before(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wait_slots, "_asking", {})


@pytest.fixture
def four_slots(settings):
    settings.PREDICTION_MAX_WAITERS = 4
    settings.ADMISSION_ANONYMOUS_SHARE = 0.5


def hold(stack: ExitStack, client: str, slots: int) -> None:
    for _ in range(slots):
        assert stack.enter_context(wait_slots.wait_slot(client)), f"{client} was refused"


def test_anonymous_clients_alone_hold_every_slot(four_slots):
    with ExitStack() as stack:
        hold(stack, "anon:2001:db8:1::/64", 2)
        hold(stack, "anon:2001:db8:2::/64", 2)
        assert wait_slots.held() == 4


def test_beside_an_identified_client_the_pool_holds_its_share(four_slots):
    with ExitStack() as stack:
        hold(stack, "user:1", 1)
        hold(stack, "anon:2001:db8:1::/64", 2)  # the pool's two
        with wait_slots.wait_slot("anon:2001:db8:2::/64") as refused:
            assert not refused  # one slot is free, but not the pool's
        hold(stack, "user:1", 1)  # two clients: two each
        assert wait_slots.held() == 4


def test_an_identified_client_refused_by_a_full_process_gets_the_slots_that_end(four_slots):
    with ExitStack() as first, ExitStack() as second:
        hold(first, "anon:2001:db8:1::/64", 2)
        hold(second, "anon:2001:db8:2::/64", 2)
        with wait_slots.wait_slot("user:1") as full:
            assert not full and full.reason.startswith("Too many clients are waiting")
        second.close()  # two anonymous waits end: the pool holds its share, two
        with wait_slots.wait_slot("anon:2001:db8:2::/64") as kept:
            assert not kept  # two slots are free, kept for the client that was refused
        hold(first, "user:1", 2)  # it comes back: in at once
        assert wait_slots.held() == 4
