"""build_providers turns the MENTION_PROVIDERS setting into provider objects."""

from __future__ import annotations

import pytest

from marketdata.mentions import (
    SampleMentionProvider,
    UnconfiguredXProvider,
    XProvider,
    build_providers,
)


def test_it_builds_providers_in_setting_order():
    providers = build_providers(["x", "sample"], bearer_token="token", timeout=3.0)

    assert [type(p) for p in providers] == [XProvider, SampleMentionProvider]
    assert providers[0].timeout == 3.0


def test_it_never_lets_tweepy_sleep_on_rate_limits():
    (provider,) = build_providers(["x"], bearer_token="token")

    assert provider.client.wait_on_rate_limit is False


def test_it_replaces_x_without_a_token_by_a_placeholder():
    providers = build_providers(["X", "sample"], bearer_token="")

    assert isinstance(providers[0], UnconfiguredXProvider)
    assert providers[0].name == "x"


def test_it_rejects_unknown_names_listing_the_valid_ones():
    with pytest.raises(ValueError) as info:
        build_providers(["sample", "reddit"], bearer_token=None)

    assert "'reddit'" in str(info.value)
    assert "'x'" in str(info.value) and "'sample'" in str(info.value)
