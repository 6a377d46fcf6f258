"""Which application modules one call passes through, traced with `sys.setprofile`.

A module is *entered* when a function of it is called from another application module
(frames of Django, DRF, Celery... in between are looked through); entering a module that
was entered before is a *return* to it, and a module's direct call into one of a higher
import layer (pyproject.toml's layers contract) is a *climb*. A framework calling the next
piece (a middleware's `get_response`, an `on_commit` callback) climbs nothing: the
framework is the caller.
"""

from __future__ import annotations

import sys
import tomllib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
# The application's top-level packages: the edges, the apps, the library, the plumbing and
# the wiring (what a trace follows, and where a retired word may not come back).
APPLICATION = (
    "api",
    "webui",
    "streams",
    "batch",
    "provisioning",
    "workers",
    "market",
    "predictions",
    "registry",
    "marketdata",
    "forecasting",
    "plumbing",
    "config",
)


def layers() -> list[set[str]]:
    """The layers contract's layers, top first, each a set of top-level packages."""
    contracts = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]["contracts"]
    contract = next(c for c in contracts if c["type"] == "layers")
    return [{name.strip() for name in layer.split("|")} for layer in contract["layers"]]


@dataclass
class CallPath:
    entries: list[tuple[str, str]] = field(default_factory=list)  # (caller, callee) modules
    climbs: list[tuple[str, str]] = field(default_factory=list)

    @property
    def modules(self) -> list[str]:
        return list(dict.fromkeys(callee for _, callee in self.entries))

    @property
    def returns(self) -> int:
        return len(self.entries) - len(self.modules)

    def entered(self) -> Counter[str]:
        return Counter(callee for _, callee in self.entries)

    def report(self) -> str:
        counts = self.entered()
        lines = [
            f"{len(self.modules)} modules, {self.returns} returns to a module already left, "
            f"{len(self.climbs)} climbs up a layer"
        ]
        lines += [f"  {counts[m]}x {m}" for m in self.modules]
        lines += [f"  climb: {a} -> {b}" for a, b in self.climbs]
        return "\n".join(lines)


def trace(call: Callable[[], Any], packages: tuple[str, ...]) -> tuple[Any, CallPath]:
    """Run `call`, recording each entry into a module of `packages` from another one."""
    rank = {pkg: depth for depth, layer in enumerate(layers()) for pkg in layer}
    path = CallPath()
    stack: list[str | None] = []  # per frame: its application module, None for others

    def app_module(frame: FrameType) -> str | None:
        name = frame.f_globals.get("__name__", "")
        return name if name.split(".")[0] in packages else None

    def innermost() -> str | None:
        return next((m for m in reversed(stack) if m is not None), None)

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            module = app_module(frame)
            caller = innermost()
            if module is not None and caller is not None and module != caller:
                path.entries.append((caller, module))
                callee_rank = rank.get(module.split(".")[0], -1)
                caller_rank = rank.get(caller.split(".")[0], -1)
                direct = stack[-1] == caller
                if direct and 0 <= callee_rank < caller_rank:
                    path.climbs.append((caller, module))
            stack.append(module)
        elif event == "return" and stack:
            stack.pop()

    def start() -> Any:
        stack.append(app_module(sys._getframe(1)))
        return call()

    sys.setprofile(profile)
    try:
        result = start()
    finally:
        sys.setprofile(None)
    return result, path
