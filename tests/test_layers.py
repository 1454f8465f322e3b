"""The layers contracts (pyproject.toml's [tool.importlinter], docs/architecture.md): no
layer imports one above it. ``lint-imports`` at the repository root is the same check, for
anyone to run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONTRACTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
LAYERED = [c for c in CONTRACTS if c["type"] == "layers"]
# The top layer has no contract of its own: every other contract names it above itself.
TOP = ["conformance.cli", "conformance.plugin", "conformance.test_conformance", "conformance.test_chaos_scenarios"]
WORKERS = "conformance.workers"  # a column of its own (the workers contract), beside the layers


def _names(layer: str) -> list[str]:
    return [name.strip() for name in layer.replace("|", ":").split(":")]


def _layer(contract: dict) -> list[str]:
    return _names(contract["layers"][1])


def test_each_contract_names_every_layer_above_it_in_order() -> None:
    """A stale contract (a layer forgotten above another) would let an upward import pass."""
    above = list(TOP)
    for contract in LAYERED:
        expected = above if _layer(contract)[0].startswith("conformance") else \
            ["conformance"] + [m for m in above if m.startswith("fakebroker")]
        assert _names(contract["layers"][0]) == expected, contract["name"]
        above += _layer(contract)


def test_the_architecture_page_lists_the_contracts_layers_in_order() -> None:
    """docs/architecture.md's layer table is the contracts' order, row by row, top first."""
    page = (ROOT / "docs" / "architecture.md").read_text()
    rows = re.findall(r"^\| (\d+) \| `([^`]+)` \|", page, re.MULTILINE)
    contracts = [" : ".join(TOP)] + [c["layers"][1] for c in LAYERED]
    assert [int(n) for n, _ in rows] == list(range(1, len(contracts) + 1))
    assert [layer for _, layer in rows] == contracts


def test_every_package_and_module_has_a_layer() -> None:
    layered = set(TOP) | {m for c in LAYERED for m in _layer(c)}
    packages = {f"fakebroker.{p.parent.name}" for p in (ROOT / "fakebroker").glob("*/__init__.py")}
    suite = {f"conformance.{p.parent.name}" for p in (ROOT / "conformance").glob("*/__init__.py")} | \
            {f"conformance.{p.stem}" for p in (ROOT / "conformance").glob("*.py") if p.stem != "__init__"}
    assert packages and packages <= layered, packages - layered
    assert suite - {WORKERS} <= layered, suite - {WORKERS} - layered


def test_no_layer_imports_one_above_it() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-c", "import sys, importlinter.cli as c; "
                          "sys.exit(c.lint_imports(no_cache=True, no_logo=True))"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"Contracts: {len(CONTRACTS)} kept, 0 broken." in run.stdout, run.stdout


def test_the_benchmarks_import_nothing_of_the_tests() -> None:
    """bench/ measures the package as users get it: no ``tests`` module, and no ``tests``
    folder put on the import path (a bench reaching a test helper by sys.path did once)."""
    reach = re.compile(r"^\s*(from\s+tests\b|import\s+tests\b|sys\.path\.\w+\(.*[\"']tests[\"'])", re.M)
    found = [f"{p.name}: {m.group(0).strip()}" for p in sorted((ROOT / "bench").glob("*.py"))
             for m in reach.finditer(p.read_text(encoding="utf-8"))]
    assert not found, found
