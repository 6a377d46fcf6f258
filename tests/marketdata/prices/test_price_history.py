"""PriceHistory validates once, round-trips exactly and has a stable store key."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest

from marketdata.prices import PriceHistory, SamplePriceProvider
from tests.support.prices import tiny_history


def test_it_round_trips_through_bytes_exactly() -> None:
    original = SamplePriceProvider().history("AAPL")

    blob = original.to_bytes()
    copy = PriceHistory.from_bytes(blob)

    assert copy == original
    assert copy.dates.dtype == np.dtype("datetime64[D]")
    for column in ("open", "high", "low", "close", "volume", "adj_close"):
        assert getattr(copy, column).tobytes() == getattr(original, column).tobytes()
    assert len(blob) < original.dates.nbytes * 7  # compressed, not pickled objects


def test_it_keys_content_stably() -> None:
    aapl = SamplePriceProvider().history("AAPL")
    key = aapl.content_key()

    assert key == PriceHistory.from_bytes(aapl.to_bytes()).content_key()
    assert len(key) == 24 and int(key, 16) >= 0
    assert aapl.tail(100).content_key() != key
    assert aapl.with_source("sample+emulated-latency").content_key() != key
    # Pinned: the key must not drift between processes or library versions.
    assert tiny_history().content_key() == "980bbe33b37c781a749cc944"


def test_it_rejects_blobs_that_are_not_histories() -> None:
    with pytest.raises(ValueError, match="not a PriceHistory blob"):
        PriceHistory.from_bytes(b"definitely not npz")


def test_it_exposes_dates_and_tail() -> None:
    history = tiny_history(bars=5)

    assert len(history) == 5
    assert history.first_bar_date == dt.date(2024, 1, 2)
    assert history.last_bar_date == dt.date(2024, 1, 6)
    last2 = history.tail(2)
    assert len(last2) == 2 and last2.first_bar_date == dt.date(2024, 1, 5)
    assert history.tail(50) is history
    with pytest.raises(ValueError):
        history.tail(0)


def test_it_is_read_only() -> None:
    history = tiny_history()
    with pytest.raises(ValueError):
        history.adj_close[0] = 1.0


def test_it_refuses_unusable_data_at_construction() -> None:
    good = tiny_history(bars=3)
    cols = {c: getattr(good, c) for c in ("open", "high", "low", "close", "volume")}
    with pytest.raises(ValueError, match="adj_close contains NaN"):
        PriceHistory("X", "t", good.dates, **cols, adj_close=[1.0, np.nan, 2.0])
    with pytest.raises(ValueError, match="adj_close must be positive"):
        PriceHistory("X", "t", good.dates, **cols, adj_close=[1.0, 0.0, 2.0])
    with pytest.raises(ValueError, match="strictly ascending"):
        PriceHistory("X", "t", good.dates[::-1], **cols, adj_close=good.adj_close)
    with pytest.raises(ValueError, match="shape"):
        PriceHistory("X", "t", good.dates, **cols, adj_close=good.adj_close[:2])


def test_it_cleans_provider_rows_before_constructing() -> None:
    history = PriceHistory.from_columns(
        "X",
        "t",
        dates=["2024-01-03", "2024-01-02", "2024-01-04", "2024-01-04", "2024-01-05"],
        open=[3, 2, 4, 4.5, 5],
        high=[3, 2, 4, 4.5, 5],
        low=[3, 2, 4, 4.5, 5],
        close=[3, 2, 4, 4.5, 5],
        volume=[30, np.nan, 40, 45, 50],
        adj_close=[3, 2, 4, 4.5, -1],  # last row unusable
    )

    assert history.dates.astype(str).tolist() == ["2024-01-02", "2024-01-03", "2024-01-04"]
    assert history.adj_close.tolist() == [2.0, 3.0, 4.5]  # later duplicate wins
    assert history.volume.tolist() == [0.0, 30.0, 45.0]  # missing volume counts as 0
