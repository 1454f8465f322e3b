"""``CoordinatorView`` (the coordinator as its handlers and ``migration`` know it) names
exactly what they use, and ``GroupCoordinator`` has all of it: no type checker runs here, so
this is what keeps the Protocol honest."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import fakebroker.coordinator.apis as apis
from fakebroker.coordinator import GroupCoordinator, migration
from fakebroker.coordinator.view import CoordinatorView

_VIEW = {name for name in vars(CoordinatorView) if not name.startswith("_")} | set(
    CoordinatorView.__annotations__)


def _used(path: Path) -> set[str]:
    """Every ``coord.<name>`` in ``path`` (the handlers' name for the coordinator)."""
    return {node.attr for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id == "coord"}


def test_the_handlers_and_migration_use_only_what_the_view_names() -> None:
    files = sorted(Path(apis.__file__).parent.glob("*.py")) + [Path(inspect.getfile(migration))]
    used = set().union(*(_used(f) for f in files))
    assert used, "no coord.<name> found: the scan no longer sees the handlers"
    assert used <= _VIEW, f"used but not in CoordinatorView: {sorted(used - _VIEW)}"
    assert _VIEW <= used, f"in CoordinatorView but unused: {sorted(_VIEW - used)}"


def test_the_coordinator_has_everything_the_view_names() -> None:
    coord = GroupCoordinator()
    missing = sorted(name for name in _VIEW if not hasattr(coord, name))
    assert not missing, missing
