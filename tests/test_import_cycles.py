"""No circle of files that import each other in ``fakebroker/`` or ``conformance/``.

The graph is file-level and counts every import, including those inside functions and
under ``TYPE_CHECKING`` (a deferred import hides a cycle, it does not remove one). A package's
``__init__`` is a file like any other: ``from pkg import name`` is an edge to ``pkg/__init__.py``,
or to the submodule when ``name`` is one (a submodule's own package is not counted as
imported by it: that would make every ``__init__`` that imports its submodules a circle). Run it as a script to list the
circles: ``python tests/test_import_cycles.py``.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("fakebroker", "conformance")


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def _imported(path: Path, name: str, modules: dict[str, Path]) -> set[str]:
    """The project modules ``path`` (module ``name``) imports, anywhere in the file."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    edges: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # `from pkg import sub` imports the submodule; `from pkg import name`, pkg itself.
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        else:
            continue
        for target in targets:
            # `import a.b.c` runs a, a.b and a.b.c; an edge to the deepest one that is a file
            # of ours is enough, since its parents' __init__ files run on the way.
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                edges.add(target)
    return edges


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imported(path, name, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """Strongly connected components of more than one file (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(frozenset(component))
    return found


def test_the_graph_sees_imports_inside_functions_and_under_type_checking() -> None:
    graph = import_graph()
    assert "conformance.matrix" in graph["conformance.cli"]  # `from .matrix import register`, in a function
    assert "fakebroker.server.apis.context" in graph["fakebroker.server.proxy"]  # under TYPE_CHECKING


def test_a_circle_is_found_and_a_chain_is_not() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [frozenset({"a", "b", "c"})]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_no_circle_of_files_imports_each_other() -> None:
    found = cycles(import_graph())
    assert not found, "\n".join(" <-> ".join(sorted(c)) for c in found)


if __name__ == "__main__":
    circles = cycles(import_graph())
    for circle in circles:
        print(" <-> ".join(sorted(circle)))
    print(f"{len(circles)} circles of files that import each other")
    sys.exit(1 if circles else 0)
