"""The case registry: one case per requirement id, registered by the suites' modules.

The harness never imports the suites: whoever runs them (the plugin, the CLI, suite power)
hands ``load_cases`` the suite package, whose modules register their cases on import.

    @case("CLS-JOIN-01")
    async def member_id_required(ctx: CoordinatorContext) -> None: ...
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

CaseFn = Callable[[Any], Awaitable[None]]


@dataclass(frozen=True)
class Case:
    requirement_id: str
    suite: str           # "coordinator" or "worker": which kind of target it runs against
    fn: CaseFn
    timeout_s: float     # a hard bound on the whole case (its own waits are bounded too)

    @property
    def name(self) -> str:
        return f"{self.fn.__module__}.{self.fn.__name__}"


CASES: dict[str, Case] = {}


def case(requirement_id: str, *, suite: str = "coordinator",
         timeout_s: float = 120.0) -> Callable[[CaseFn], CaseFn]:
    def register(fn: CaseFn) -> CaseFn:
        if requirement_id in CASES:
            raise ValueError(f"two cases for {requirement_id}: {CASES[requirement_id].name} "
                             f"and {fn.__module__}.{fn.__name__}")
        CASES[requirement_id] = Case(requirement_id, suite, fn, timeout_s)
        return fn
    return register


_loaded: set[str] = set()  # the suite packages imported


def load_cases(suites: ModuleType) -> dict[str, Case]:
    """Import every module of the suite package ``suites`` (``conformance.suites``); each
    registers its cases."""
    if suites.__name__ not in _loaded:
        for info in pkgutil.walk_packages(suites.__path__, suites.__name__ + "."):
            importlib.import_module(info.name)
        _loaded.add(suites.__name__)
    return CASES


def loaded_cases() -> dict[str, Case]:
    """The cases registered so far. Before any suite is loaded this is an error, not an
    empty registry: a requirement would otherwise run as if it had no live case."""
    if not _loaded:
        raise RuntimeError("no suite loaded: the runner's caller hands load_cases the suite package")
    return CASES
