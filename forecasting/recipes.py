"""A model's recipe: what, besides the data, decides the state a fit produces.

Why: a refit of the same code on a few more bars cannot be told apart from the generation
it replaces in any useful time (their daily errors differ by about 1 % of their spread),
so it is served at once and model health watches it; a change of code or settings is what
the shadow judge is for. The registry keeps each generation's recipe and compares it with
the running code's to know which of the two a new generation is.

The recipe digests the model's name, state version, default parameters, the seed, and the
source of the modules that define it (its class and the package's private helpers it
uses): editing ridge.py changes ridge's recipe, editing the combiner changes none.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import sys
from pathlib import Path
from types import ModuleType

from .catalog import get_model_class

PACKAGE = __name__.rpartition(".")[0]
SHARED = {f"{PACKAGE}.base"}  # the contract every model shares is not any one model's recipe


@functools.cache
def recipe(name: str, seed: int) -> str:
    """A short digest naming the model's code and settings."""
    cls = get_model_class(name)
    facts = {
        "model": name,
        "state_version": cls.state_version,
        "params": cls.default_params,
        "seed": seed,
        "code": {module.__name__: _digest(module) for module in _defining_modules(cls)},
    }
    text = json.dumps(facts, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _defining_modules(cls: type) -> list[ModuleType]:
    """The package's modules behind the class: those of its bases, and the private helper
    modules (`_name`) any of them imports from."""
    found: dict[str, ModuleType] = {}
    pending = [
        sys.modules[klass.__module__]
        for klass in cls.__mro__
        if klass.__module__.startswith(f"{PACKAGE}.") and klass.__module__ not in SHARED
    ]
    while pending:
        module = pending.pop()
        if module.__name__ in found:
            continue
        found[module.__name__] = module
        for value in vars(module).values():
            owner = value if inspect.ismodule(value) else inspect.getmodule(value)
            if owner is not None and owner.__name__.startswith(f"{PACKAGE}._"):
                pending.append(owner)
    return [found[name] for name in sorted(found)]


def _digest(module: ModuleType) -> str:
    source = Path(inspect.getfile(module)).read_bytes()
    return hashlib.sha256(source).hexdigest()[:16]
