from __future__ import annotations

import pytest

pytestmark = pytest.mark.postgres


@pytest.mark.django_db
def test_it_lists_the_offline_symbols(api_client):
    body = api_client.get("/api/v1/symbols/").json()
    symbols = {entry["symbol"] for entry in body["offline"]}
    assert {"AAPL", "GOOG", "IBM", "MSFT", "FB", "^GSPC", "^IXIC"} <= symbols
    assert body["providers"] == ["sample"]
