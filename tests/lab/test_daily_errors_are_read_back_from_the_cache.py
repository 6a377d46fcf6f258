"""A second call for the same inputs reads the cached arrays instead of refitting."""

from __future__ import annotations

import numpy as np
import pytest

from lab.decisions import daily


def test_a_cache_hit_returns_the_same_arrays_without_computing(tmp_path, monkeypatch):
    first = daily.daily_errors("^GSPC", models=("naive",), cache_dir=tmp_path)
    assert len(list(tmp_path.glob("daily-gspc-*.npz"))) == 1

    def refuse(*args, **kwargs):
        raise AssertionError("computed again despite a cached result")

    monkeypatch.setattr(daily, "compute_daily_errors", refuse)
    second = daily.daily_errors("^GSPC", models=("naive",), cache_dir=tmp_path)
    assert second.symbol == first.symbol
    np.testing.assert_array_equal(second.dates, first.dates)
    np.testing.assert_array_equal(second.scale, first.scale)
    np.testing.assert_array_equal(second.errors["naive"], first.errors["naive"])
    assert second.dates.dtype == np.dtype("datetime64[D]")


def test_other_inputs_miss_the_cache(tmp_path, monkeypatch):
    daily.daily_errors("^GSPC", models=("naive",), cache_dir=tmp_path)
    monkeypatch.setattr(daily, "compute_daily_errors", _boom)
    with pytest.raises(RuntimeError, match="computed"):
        daily.daily_errors("^GSPC", models=("naive",), refit_every=21, cache_dir=tmp_path)


def _boom(*args, **kwargs):
    raise RuntimeError("computed")
