"""A REST prediction, traced from the view through the gate to its dispatch, and on to its
final step with every task run in this process (Celery's eager mode): which files and
packages it enters, how often it comes back to one it left, and whether a call ever climbs
up an import layer (a lower layer calling a higher one through a callback).
`make -C lab request-path` prints the figures."""

from __future__ import annotations

import pytest

from tests.support.call_path import APPLICATION, trace

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_rest_prediction_enters_each_layer_from_above(api_client):
    warm = api_client.post("/api/v1/predictions/", {"symbol": "AAPL"}, format="json")
    assert warm.status_code == 202, warm.content  # imports and first-use set-up done
    response, path = trace(
        lambda: api_client.post("/api/v1/predictions/", {"symbol": "IBM"}, format="json"),
        APPLICATION,
    )
    assert response.status_code == 202, response.content
    print(f"\nREST prediction, view to dispatch: {path.report()}")
    assert path.climbs == []


@pytest.fixture
def eager_pipeline(settings):
    """Every task run in this process, so one trace sees the whole path. Only the path is
    read here: what the pipeline does is tested with real workers (design rule 8)."""
    import predictions.tasks  # noqa: F401  (registered here, a signature by name runs eagerly)
    from config.celery_app import app

    settings.PREDICTION_MODELS = ["naive", "ridge"]
    app.conf.task_always_eager, app.conf.task_eager_propagates = True, True
    try:
        yield
    finally:
        app.conf.task_always_eager, app.conf.task_eager_propagates = False, False


def test_a_rest_prediction_reaches_its_final_step_entering_each_layer_from_above(
    api_client, eager_pipeline
):
    from predictions.models import PredictionRequest

    warm = api_client.post("/api/v1/predictions/", {"symbol": "AAPL"}, format="json")
    assert warm.status_code == 202, warm.content  # imports and first-use set-up done
    response, path = trace(
        lambda: api_client.post("/api/v1/predictions/", {"symbol": "IBM"}, format="json"),
        APPLICATION,
    )
    assert response.status_code == 202, response.content
    assert PredictionRequest.objects.get(id=response.json()["id"]).status == "done"
    packages = sorted({module.split(".")[0] for module in path.modules})
    print(f"\nREST prediction, view to final step: {len(packages)} packages {packages}; "
          f"{path.report()}")  # fmt: skip
    assert path.climbs == []


def test_the_gates_leg_enters_each_layer_from_above(api_client):
    from predictions import gate

    warm = gate.ask(gate.Question("AAPL", 5), gate.Client("anon:192.0.2.1"))
    assert isinstance(warm, gate.Queued)
    outcome, path = trace(
        lambda: gate.ask(gate.Question("IBM", 5), gate.Client("anon:192.0.2.1")), APPLICATION
    )
    assert isinstance(outcome, gate.Queued) and not outcome.joined
    print(f"\nThe gate's leg, ask to dispatch: {path.report()}")
    assert path.climbs == []


RESULT = {
    "data": {"last_bar_date": "2012-02-29", "last_close": 100.0},
    "combined": {
        "forecast": [101.0, 102.0],
        "interval": {"level": 0.8, "lower": [99.0, 99.5], "upper": [103.0, 104.5]},
    },
    "models": [{"model": "naive", "ok": True, "forecast": [100.0, 100.0], "weight": 1.0}],
}


def test_the_final_step_enters_each_layer_from_above():
    from predictions import final
    from predictions.models import PredictionRequest
    from predictions.submission import join

    def finished_leader(symbol: str) -> PredictionRequest:
        leader = PredictionRequest.queued(symbol=symbol, horizon=2, joinable=True)
        leader.save()
        join(leader, None)  # one follower, ended with it
        return leader

    final.finish(finished_leader("AAPL"), RESULT)  # imports and first-use set-up done
    leader = finished_leader("IBM")
    done, path = trace(lambda: final.finish(leader, RESULT), APPLICATION)
    assert done and leader.followers.get().status == "done"
    print(f"\nThe final step, a leader with one follower: {path.report()}")
    assert path.climbs == []
