"""Yahoo, mocked at its HTTP layer as the price tests mock it, for the scoring tests that
read live histories."""

from __future__ import annotations

from tests.prices.conftest import fake_yahoo  # noqa: F401  (the fixture, for this folder)
