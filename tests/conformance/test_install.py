"""A plain install certifies: the wheel built from a clean clone (``git clone`` of this
repository into a folder with nothing beside it), installed with its runtime dependencies
only into a fresh venv outside the checkout, gives working ``conformance`` and
``fakebroker`` commands, and certifies a third-party-style worker target from another
folder, with the digest of the script it runs.

Affordable on this machine: the runtime dependencies are downloaded once into a wheelhouse
(``pip download``, from pip's cache after the first time) and installed with ``--no-index``
and ``--no-compile`` into a venv made ``--without-pip`` (the project venv's pip installs into
it with ``--python``): measured 2 s for the venv and 44 s for the install at load 24, against
87 s and 85 s with ensurepip and bytecode compilation (bench/README.md has the figures)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from conformance.attestation import STATEMENT_FILE

ROOT = Path(__file__).resolve().parents[2]
DRAFT_WORKER = ROOT / "fixtures" / "targets" / "draft-worker.toml"

# A worker of one's own, in its own folder: a script beside its target file (here it runs the
# suite's reference draft worker, so that it certifies; any script would be digested alike).
MY_WORKER = '''"""My Connect worker for the KIP-848 draft (a thin script around the reference worker)."""
import sys

from conformance.workers.draft_worker import main

sys.exit(main())
'''


def clean_env() -> dict[str, str]:
    """Nothing that would import the checkout or point at its folders."""
    return {k: v for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "CONFORMANCE_GOLDEN_DIR", "CONFORMANCE_SHARED_DIR", "FAKEBROKER_SCHEMAS",
                         "VIRTUAL_ENV")}


def run(*cmd: str | Path, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=clean_env())


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fresh venv's bin folder, with the wheel of a clean clone and its runtime
    dependencies, nothing else."""
    base = tmp_path_factory.mktemp("install")
    clone = run("git", "clone", "-q", ROOT, base / "src", cwd=base)
    assert clone.returncode == 0, clone.stderr
    assert not (base / "shared").exists()
    built = run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", base / "dist", base / "src", cwd=base)
    assert built.returncode == 0, f"the wheel did not build (hatchling from pip's cache or PyPI):\n{built.stderr[-3000:]}"
    [wheel] = (base / "dist").glob("connect_conformance-*.whl")
    got = run(sys.executable, "-m", "pip", "download", "-q", "-d", base / "wheelhouse", wheel, cwd=base)
    assert got.returncode == 0, got.stderr[-3000:]
    venv.EnvBuilder(with_pip=False).create(base / "venv")
    python = base / "venv" / "bin" / "python"
    inst = run(sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-compile", "--no-index",
               "--find-links", base / "wheelhouse", wheel, cwd=base)
    assert inst.returncode == 0, inst.stderr[-3000:]
    return base / "venv" / "bin"


def test_the_commands_run_and_every_module_imports(installed: Path, tmp_path: Path) -> None:
    for command in ("conformance", "fakebroker"):
        r = run(installed / command, "--version", cwd=tmp_path)
        assert r.returncode == 0 and "(connect-conformance)" in r.stdout, (command, r.stdout, r.stderr)
    # Every module imports with the runtime dependencies alone, but the Spark pipeline's
    # (the `spark` extra).
    r = run(installed / "python", "-c", "import importlib, pkgutil, conformance, fakebroker\n"
            "for pkg in (conformance, fakebroker):\n"
            "    for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.'):\n"
            "        if not m.name.startswith('conformance.pipeline.'):\n"
            "            importlib.import_module(m.name)\n"
            "print(conformance.__file__)", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip().startswith(str(installed.parent)), r.stdout  # not the checkout
    # pytest and its plugins come with it: the plugin route works too.
    r = run(installed / "python", "-m", "pytest", "--pyargs", "conformance", "--help", cwd=tmp_path)
    assert r.returncode == 0 and "--conformance-target=FILE" in r.stdout and "--alluredir" in r.stdout


def test_a_worker_of_ones_own_certifies_from_outside_the_checkout(installed: Path, tmp_path: Path) -> None:
    mine = tmp_path / "my-worker"
    mine.mkdir()
    (mine / "my_worker.py").write_text(MY_WORKER)
    # The bundled draft worker's target, pointed at the script beside it (a path relative to
    # the target file, which the run is started from the folder above).
    target = DRAFT_WORKER.read_text().replace("{python} -m conformance.workers.draft_worker", "{python} my_worker.py")
    target = target.replace('name = "draft-worker"', 'name = "my-worker"')
    assert "{python} my_worker.py" in target
    (mine / "my-worker.toml").write_text(target)
    reports = tmp_path / "reports"
    r = run(installed / "conformance", "run", "--target", "my-worker/my-worker.toml", "-n", "2", "--no-html",
            "--reports", reports, cwd=tmp_path, timeout=900)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    cert = json.loads((reports / "certificate.json").read_text())
    assert cert["verdict"] == "CERTIFIED" and cert["left_out"] == [] and cert["run_id"]
    art = cert["provenance"]["artefact"]
    assert art["chosen"].startswith("the script the command runs") and art["sha256"], art
    assert cert["provenance"]["suite"]["commit"] is None  # not a checkout
    statement = json.loads((reports / STATEMENT_FILE).read_text())
    assert statement["subject"][0]["digest"]["sha256"] == art["sha256"]


def test_a_missing_script_is_refused_before_any_case_runs(installed: Path, tmp_path: Path) -> None:
    mine = tmp_path / "my-worker"
    mine.mkdir()
    target = DRAFT_WORKER.read_text().replace("{python} -m conformance.workers.draft_worker", "{python} my_worker.py")
    (mine / "my-worker.toml").write_text(target)
    r = run(installed / "conformance", "run", "--target", "my-worker/my-worker.toml", "--reports", tmp_path / "r",
            cwd=tmp_path, timeout=60)
    assert r.returncode == 2, r.stdout + r.stderr
    [line] = r.stderr.splitlines()
    assert f"the script {mine / 'my_worker.py'} is not there" in line and "rule command-exists" in line
    assert not (tmp_path / "r").exists()  # nothing ran
