from __future__ import annotations

import pytest

from forecasting.base import Forecaster, ForecastError
from forecasting.catalog import MODEL_NAMES, MODEL_SPECS, create_model, get_model_class, model_info


def test_it_offers_the_competing_models():
    assert MODEL_NAMES == ("naive", "ridge", "arima", "lstm", "tcn")
    assert [m["name"] for m in model_info()] == list(MODEL_NAMES)
    assert {m["name"] for m in model_info() if m["benefits_from_gpu"]} == {"lstm", "tcn"}


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_it_keeps_the_table_in_sync_with_the_classes(name):
    cls = get_model_class(name)
    spec = MODEL_SPECS[name]

    assert issubclass(cls, Forecaster)
    assert (cls.name, cls.label, cls.benefits_from_gpu, cls.min_history, cls.state_version) == (
        spec.name,
        spec.label,
        spec.benefits_from_gpu,
        spec.min_history,
        spec.state_version,
    )


def test_it_names_the_choices_for_an_unknown_model():
    with pytest.raises(ForecastError, match="unknown model 'prophet'.*naive"):
        get_model_class("prophet")


def test_it_rejects_unknown_constructor_params():
    with pytest.raises(ForecastError, match="does not accept"):
        create_model("ridge", alpha_typo=3)
