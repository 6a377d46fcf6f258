"""Typed readers for environment variables.

Every setting of the project comes from the environment through these helpers, so
a wrong value fails loudly at start-up instead of misbehaving later.
"""

from __future__ import annotations

import os
from datetime import date
from typing import TypeVar


class ImproperlyConfiguredEnv(ValueError):
    """An environment variable holds a value that cannot be used."""


def env_str(name: str, default: str = "") -> str:
    """A string; `NAME_FILE` (a path) wins, so secrets can come from files."""
    path = os.environ.get(f"{name}_FILE")
    if path:
        with open(path, encoding="utf-8") as f:
            return f.read().strip()
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfiguredEnv(f"{name} must be true or false, got {raw!r}")


N = TypeVar("N", int, float)


def _number(name: str, default: N, minimum: N | None, parse: type[N], kind: str) -> N:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = parse(raw)
    except ValueError as exc:
        raise ImproperlyConfiguredEnv(f"{name} must be {kind}, got {raw!r}") from exc
    if minimum is not None and value < minimum:
        raise ImproperlyConfiguredEnv(f"{name} must be at least {minimum}, got {value}")
    return value


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    return _number(name, default, minimum, int, "an integer")


def env_float(name: str, default: float, *, minimum: float | None = None) -> float:
    return _number(name, default, minimum, float, "a number")


def env_list(name: str, default: list[str]) -> list[str]:
    """A comma-separated list; blanks are dropped."""
    raw = os.environ.get(name)
    if raw is None:
        return list(default)
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_latency(name: str) -> tuple[float, float] | None:
    """An emulated latency profile `MEAN_MS[,JITTER_MS]`, or None when unset."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    parts = raw.split(",")
    try:
        mean = float(parts[0])
        jitter = float(parts[1]) if len(parts) > 1 else 0.0
    except ValueError as exc:
        raise ImproperlyConfiguredEnv(f"{name} must be 'MEAN_MS[,JITTER_MS]', got {raw!r}") from exc
    if mean < 0 or jitter < 0 or len(parts) > 2:
        raise ImproperlyConfiguredEnv(f"{name} must be 'MEAN_MS[,JITTER_MS]', got {raw!r}")
    return (mean, jitter)


def env_choice(name: str, default: str, choices: tuple[str, ...] | list[str]) -> str:
    """One of `choices` (case-insensitive); anything else fails with the valid names."""
    value = os.environ.get(name, "").strip().lower() or default
    if value not in choices:
        raise ImproperlyConfiguredEnv(f"{name} must be one of {', '.join(choices)}, got {value!r}")
    return value


def env_date(name: str, default: str) -> date:
    """An ISO date (2012-11-01); anything else fails with the expected form."""
    value = os.environ.get(name, "").strip() or default
    try:
        return date.fromisoformat(value)
    except ValueError as exc:
        raise ImproperlyConfiguredEnv(
            f"{name} must be a date like 2012-11-01, got {value!r}"
        ) from exc


def env_hang(name: str) -> tuple[str, float] | None:
    """`model:seconds` (ridge:5) -> (model, seconds); unset -> None."""
    value = os.environ.get(name, "").strip()
    if not value:
        return None
    try:
        model, seconds = value.split(":")
        return model.strip(), max(0.0, float(seconds))
    except ValueError as exc:
        raise ImproperlyConfiguredEnv(f"{name} must look like ridge:5, got {value!r}") from exc


def env_fault(name: str) -> tuple[str, float, date] | None:
    """`model:bias:date` (ridge:0.03:2012-09-04) -> (model, bias, date); unset -> None."""
    value = os.environ.get(name, "").strip()
    if not value:
        return None
    try:
        model, bias, since = value.split(":")
        return model.strip(), float(bias), date.fromisoformat(since.strip())
    except ValueError as exc:
        raise ImproperlyConfiguredEnv(
            f"{name} must look like ridge:0.03:2012-09-04, got {value!r}"
        ) from exc


# Values shipped as examples in this repository (compose, docs): never a real secret.
EXAMPLE_SECRETS = ("change-me", "changeme", "example", "insecure", "secret-key", "django")


def weak_secret(value: str, minimum: int = 40) -> bool:
    """Shorter than `minimum`, too repetitive, or one of the examples the repository ships."""
    lowered = value.lower()
    return (
        len(value) < minimum
        or len(set(value)) < 12
        or any(example in lowered for example in EXAMPLE_SECRETS)
    )
