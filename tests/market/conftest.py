"""Yahoo, mocked at its HTTP layer as the price tests mock it, for the scoring tests that
read live histories; yfinance's caches in a private temp dir, as there (the first
configuration in a process wins, and the shared default dir outlives the run)."""

from __future__ import annotations

from tests.marketdata.prices.conftest import fake_yahoo, yf_cache_dir  # noqa: F401  (the fixtures)
