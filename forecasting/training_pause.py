"""A point between a training's epochs where the process may stop for a while.

Why: the spare lane's worker yields the cores to a person's question at each task's start
(workers/yielding.py), yet a cold training already running went on for seconds beside a
question that came after it. A hook set here runs after every epoch of a deep model's
training in this process; the spare worker sets one that waits while a question needs the
cores. Forecasting knows nothing of lanes or questions: with no hook set, it goes on.
"""

from __future__ import annotations

from collections.abc import Callable

_hook: Callable[[], None] | None = None


def set_hook(hook: Callable[[], None] | None) -> None:
    """Run `hook` between the epochs of every training in this process (None: nothing)."""
    global _hook
    _hook = hook


def is_set() -> bool:
    return _hook is not None


def between_epochs() -> None:
    if _hook is not None:
        _hook()
