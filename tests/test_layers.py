"""The layers contract (pyproject.toml's [tool.importlinter]): no package imports one above
it. ``lint-imports`` at the repository root is the same check, for anyone to run."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _layers() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c["type"] == "layers"]
    return [name.strip() for layer in contract["layers"] for name in layer.split("|")]


def test_every_fakebroker_package_has_a_layer() -> None:
    packages = {f"fakebroker.{p.parent.name}" for p in (ROOT / "fakebroker").glob("*/__init__.py")}
    assert packages and packages <= set(_layers()), packages - set(_layers())


def test_no_package_imports_one_above_it() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-c", "import sys, importlinter.cli as c; "
                          "sys.exit(c.lint_imports(no_cache=True, no_logo=True))"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Contracts: 1 kept, 0 broken." in run.stdout, run.stdout
