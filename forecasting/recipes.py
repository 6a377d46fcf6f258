"""A model's recipe: what, besides the data, decides the state a fit produces.

Why: a refit of the same code on a few more bars cannot be told apart from the generation
it replaces in any useful time (their daily errors differ by about 1 % of their spread),
so it is served at once and model health watches it; a change of code or settings is what
the shadow judge is for. The registry keeps each generation's recipe and compares it with
the running code's to know which of the two a new generation is.

The recipe digests the model's name, state version, default parameters, the seed, and the
source of the modules that define it (its class and the package's private helpers it
uses): editing ridge.py changes ridge's recipe, editing the combiner changes none.

Computing one imports the model's code (TensorFlow for a deep model: ~2 s and ~700 MB of a
process's own memory). A process that only looks stored runs up (a request's coordinator on
`io`) needs the digests, not the models: `computed_apart` works them out in a child process
and `adopt` hands them to this one.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from .catalog import get_model_class

PACKAGE = __name__.rpartition(".")[0]
SHARED = {f"{PACKAGE}.base"}  # the contract every model shares is not any one model's recipe


_adopted: dict[tuple[str, int], str] = {}


def recipe(name: str, seed: int) -> str:
    """A short digest naming the model's code and settings."""
    return _adopted.get((name, seed)) or _computed(name, seed)


def computed_apart(names: list[str], seed: int, timeout_s: float = 120) -> dict[str, str]:
    """The recipes of `names`, worked out by a child process that imports their code, so
    this one does not; raises CalledProcessError or TimeoutExpired if the child fails."""
    argv = [sys.executable, "-m", __name__, str(seed), *names]
    root = Path(__file__).resolve().parent.parent  # where the package imports from
    done = subprocess.run(
        argv, cwd=root, capture_output=True, text=True, timeout=timeout_s, check=True
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def adopt(recipes: dict[str, str], seed: int) -> None:
    """Take recipes `computed_apart` by the same code as this process's own."""
    _adopted.update({(name, seed): digest for name, digest in recipes.items()})


@functools.cache
def _computed(name: str, seed: int) -> str:
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


if __name__ == "__main__":  # computed_apart's child: the seed, then the models' names
    from forecasting import recipes as package_module  # its PACKAGE, not __main__'s

    seed = int(sys.argv[1])
    print(json.dumps({name: package_module.recipe(name, seed) for name in sys.argv[2:]}))
