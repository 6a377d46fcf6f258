"""The global model's pooled network lives in the registry like a model's generations:
trained once for every known symbol, served, and fine-tuned when enough new bars arrive."""

from __future__ import annotations

from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command

from predictions import generations, global_network, model_registry, price_store
from predictions.forecasting.global_lstm import SERVING_HELD_OUT_BARS, GlobalNetwork
from predictions.models import GenerationEvent
from predictions.prices.sample import SAMPLE_SYMBOLS, load_sample

pytestmark = pytest.mark.django_db
SMALL = {"epochs": 1, "train_points": 300}  # a network trained in seconds


def test_the_first_training_serves_and_every_process_reads_that_network():
    first = global_network.train(worker="test", **SMALL)
    assert (first.symbol, first.model, first.generation) == ("*", "global_lstm", 1)
    assert generations.serving("*", "global_lstm") == first
    assert set(first.metrics["symbols"]) >= {"AAPL", "IBM", "^GSPC"}
    newest_known = max(load_sample(s).dates[-1 - SERVING_HELD_OUT_BARS] for s in SAMPLE_SYMBOLS
                       if len(load_sample(s).dates) > SERVING_HELD_OUT_BARS)  # fmt: skip
    assert first.data_last_date == newest_known.item()  # each sample's last year held out
    event = GenerationEvent.objects.get(symbol="*", model="global_lstm", generation=1)
    assert event.action == GenerationEvent.PROMOTED and "symbols" in event.reason

    served = global_network._Serving().get()  # a fresh process's copy
    assert served.digest == GlobalNetwork.from_bytes(model_registry.state_of(first)).digest


def test_new_bars_fine_tune_the_serving_network_and_too_few_change_nothing():
    first = global_network.train(worker="test", **SMALL)
    assert global_network.fine_tune(worker="test") == first  # nothing new since

    price_store.save(load_sample("^GSPC"))  # a request fetched the index's last year
    tuned = global_network.fine_tune(worker="test")
    assert (tuned.generation, tuned.mode, tuned.parent_generation) == (2, "fine-tuned", 1)
    assert generations.serving("*", "global_lstm") == tuned
    assert tuned.data_last_date == load_sample("^GSPC").dates[-1].item()
    before = GlobalNetwork.from_bytes(model_registry.state_of(first))
    after = GlobalNetwork.from_bytes(model_registry.state_of(tuned))
    assert after.params == before.params  # the same network, learning on
    assert not all(np.array_equal(a, b) for a, b in zip(after.weights, before.weights, strict=True))
    assert global_network._Serving().get().digest == after.digest


def test_an_operator_lists_and_rolls_back_the_pooled_network_like_any_model():
    global_network.train(worker="test", **SMALL)
    price_store.save(load_sample("^GSPC"))
    global_network.fine_tune(worker="test")
    out = StringIO()
    call_command("generations", "*", stdout=out)
    assert '"global_lstm"' in out.getvalue()

    call_command("generations", "rollback", "*", "global_lstm", reason="fine-tune looks off")
    assert generations.serving("*", "global_lstm").generation == 1
