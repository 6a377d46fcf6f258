"""A client named `answer` would own `stockserve:queue:answer:*`, the default client's
answers, and one named `done` would sit beside its wake-up channel: every name that is the
next part of a key the default client or the service uses is refused, by the protocol and
by `stream_clients add`; other names, even close ones, are allowed."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command
from stockserve_client import protocol

from tests.support.queue import named_clients

SERVICE_PARTS = {
    key.split(":")[2]
    for key in (protocol.INPUT_STREAM, protocol.OUTPUT_STREAM, protocol.ANSWER_PREFIX,
                protocol.DONE_CHANNEL, protocol.CLIENTS_KEY, "stockserve:queue:dead",
                "stockserve:queue:failures", "stockserve:queue:usage:x",
                "stockserve:queue:cutoffs")
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(SERVICE_PARTS))
def test_a_name_over_the_services_keys_is_refused(name):
    with pytest.raises(ValueError, match="reserved"):
        protocol.client_keys(name)


@pytest.mark.parametrize("name", ["answer", "done"])
def test_queue_clients_add_refuses_it_with_a_sentence(name):
    with pytest.raises(CommandError, match=f"'{name}' is reserved.*choose another name"):
        call_command("stream_clients", "add", name)


@pytest.mark.parametrize("name", ["answers", "done-2", "billing", "in", "out"])
def test_other_names_are_allowed_and_keep_to_their_own_prefix(name):
    keys = protocol.client_keys(name)
    assert {keys.input, keys.output, keys.answer_prefix, keys.done_channel} == {
        f"stockserve:queue:{name}:{part}" for part in ("in", "out", "answer:", "done")
    }


@pytest.mark.django_db
def test_an_allowed_name_is_registered():
    with named_clients("answers") as urls:
        assert urls["answers"].startswith("redis://queue-answers:")
