"""`make -C lab abuse`'s rotating anonymous client sends each request from a new IPv6 /64 of the
documentation prefix (as X-Forwarded-For, which the stack trusts with NUM_PROXIES=1), so
the service's per-address keys (an IPv6 address counts by its /64) see a new client
every time."""

from __future__ import annotations

import ipaddress

from lab.abuse_clients import abuser_pairs, rotating_address, rotating_arrivals
from predictions.rate_limits import address_key

DOCUMENTATION = ipaddress.ip_network("2001:db8::/32")


def test_every_request_is_a_new_64_the_service_keys_apart():
    addresses = [rotating_address(n) for n in range(70_000)]  # past one 16-bit field
    assert all(ipaddress.ip_address(a) in DOCUMENTATION for a in addresses[::997])
    assert len({ipaddress.ip_network(f"{a}/64", strict=False) for a in addresses}) == 70_000
    assert len({address_key(a) for a in addresses[:5000]}) == 5000


def test_the_arrivals_keep_the_rate_and_ask_new_questions():
    pairs = abuser_pairs(["AAPL", "MSFT"], 3)[-1]
    arrivals = rotating_arrivals(2.0, 10.0, pairs)
    assert len(arrivals) == 20 and arrivals[1].at - arrivals[0].at == 0.5
    assert {a.name for a in arrivals} == {"anonymous rotating /64"}
