"""Names of the scheduling strategies a request may ask for."""

from __future__ import annotations

STRATEGIES = ("chord",)
DEFAULT_STRATEGY = "chord"
