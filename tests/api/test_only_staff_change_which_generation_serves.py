"""Anyone may read which generation serves and why; only staff may promote or roll back,
with a reason, and a change names who made it."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from registry import generations
from tests.support.generations import two_generations as made_generations

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]
URL = "/api/v1/generations/"


@pytest.fixture
def two_generations():
    return made_generations()


def test_anyone_reads_the_serving_generation_and_the_trail(api_client, two_generations):
    body = api_client.get(URL, {"symbol": "ibm"}).json()

    assert body["models"] == [
        {"model": "ridge", "serving": 1, "recipe": "", "shadow": 2, "shadow_recipe": "",
         "rollback_to": None}
    ]  # fmt: skip
    assert body["events"][0]["reason"] == "the first generation of this model"
    assert api_client.get(URL, {"symbol": "not a symbol!"}).status_code == 400


def test_staff_promote_and_roll_back_with_a_reason(staff_api_client, two_generations):
    change = f"{URL}IBM/ridge/"
    missing = staff_api_client.post(change, {"action": "promote", "generation": 2}, format="json")
    assert missing.status_code == 400 and "Say why" in missing.json()["error"]

    promoted = staff_api_client.post(
        change, {"action": "promote", "generation": 2, "reason": "checked by hand"}, format="json"
    )
    assert promoted.status_code == 200
    assert promoted.json()["event"] | {"at": None} == {
        "symbol": "IBM", "model": "ridge", "generation": 2, "action": "promoted",
        "replaced": 1, "reason": "checked by hand", "actor": "operator", "recipe": "",
        "at": None,
    }  # fmt: skip
    again = staff_api_client.post(
        change, {"action": "promote", "generation": 2, "reason": "twice"}, format="json"
    )
    assert again.status_code == 400 and "already serves" in again.json()["error"]
    gone = staff_api_client.post(
        change, {"action": "promote", "generation": 9, "reason": "x"}, format="json"
    )
    assert gone.status_code == 400 and "no generation 9" in gone.json()["error"]

    back = staff_api_client.post(change, {"action": "rollback", "reason": "worse"}, format="json")
    assert back.status_code == 200 and generations.serving("IBM", "ridge").generation == 1


@pytest.mark.parametrize("who", ["anonymous", "user"])
def test_others_may_not_change_which_generation_serves(api_client, django_user_model, who,
                                                        two_generations):  # fmt: skip
    if who == "user":
        api_client.force_authenticate(django_user_model.objects.create_user("alice"))
    response = api_client.post(
        f"{URL}IBM/ridge/", {"action": "rollback", "reason": "because"}, format="json"
    )

    assert response.status_code in (401, 403)
    assert generations.serving("IBM", "ridge").generation == 1


def test_the_command_promotes_and_rolls_back_and_explains_a_refusal(two_generations, capsys):
    with pytest.raises(CommandError, match="--reason"):
        call_command("generations", "promote", "IBM", "ridge", "2")
    call_command("generations", "promote", "IBM", "ridge", "2", reason="new code")
    assert generations.serving("IBM", "ridge").generation == 2
    call_command("generations", "rollback", "IBM", "ridge", reason="regressed")
    assert generations.serving("IBM", "ridge").generation == 1
    with pytest.raises(CommandError, match="no earlier generation"):
        call_command("generations", "rollback", "IBM", "ridge", reason="again")
    call_command("generations", "IBM")
    assert '"rolled back"' in capsys.readouterr().out
