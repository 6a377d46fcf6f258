"""The generations trail shows everyone the action, generation, reason and time of each
change; who made it only to staff. A change made with `manage.py generations` is recorded
under the name the command is given (or "operator"), never the server's Unix account."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from registry import generations
from tests.support.generations import two_generations

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]
URL = "/api/v1/generations/"


@pytest.fixture
def promoted_by_staff(staff_api_client):
    two_generations()
    changed = staff_api_client.post(
        f"{URL}IBM/ridge/", {"action": "promote", "generation": 2, "reason": "checked"},
        format="json",
    )  # fmt: skip
    assert changed.status_code == 200 and changed.json()["event"]["actor"] == "operator"
    return staff_api_client


def newest(client) -> dict[str, object]:
    return client.get(URL, {"symbol": "IBM"}).json()["events"][0]


@pytest.mark.parametrize("who", ["anonymous", "user"])
def test_others_see_what_changed_and_why_not_who(promoted_by_staff, django_user_model, who):
    from rest_framework.test import APIClient

    reader = APIClient()
    if who == "user":
        reader.force_authenticate(django_user_model.objects.create_user("alice"))
    event = newest(reader)
    assert (event["action"], event["generation"], event["reason"]) == ("promoted", 2, "checked")
    assert event["at"] and event["actor"] is None
    everything = reader.get(URL).json()["events"]
    assert everything and all(e["actor"] is None for e in everything)


def test_staff_see_who_made_the_change(promoted_by_staff):
    assert newest(promoted_by_staff)["actor"] == "operator"


def test_the_command_records_the_name_it_is_given_never_the_unix_account():
    two_generations()
    call_command("generations", "promote", "IBM", "ridge", "2", reason="new code", by="ops-bob")
    assert generations.history("IBM", 1)[0]["actor"] == "ops-bob (manage.py)"
    call_command("generations", "rollback", "IBM", "ridge", reason="regressed")
    actors = [e["actor"] for e in generations.history("IBM")]
    assert actors == ["operator (manage.py)", "ops-bob (manage.py)", "registry"]
    # (before: "<the server's Unix account> (manage.py)", whatever the operator's name)
    with pytest.raises(CommandError, match="--by"):
        call_command("generations", "promote", "IBM", "ridge", "2", reason="x", by="  ")
