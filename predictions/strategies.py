"""Names of the scheduling strategies a request may ask for (implemented in workers/strategies).

Plain Python without Django, so settings can validate DEFAULT_STRATEGY against it.
"""

from __future__ import annotations

STRATEGIES = ("centralized", "chord", "cascade")


def default_strategy() -> str:
    """The DEFAULT_STRATEGY setting, read when a request is validated."""
    from django.conf import settings

    return settings.DEFAULT_STRATEGY
