"""A plain install certifies: the wheel built from a clean clone (``git clone`` of this
repository into a folder with nothing beside it), installed with its runtime dependencies
only into a fresh venv outside the checkout, gives working ``conformance`` and
``fakebroker`` commands, and, through the GitHub example's own steps, certifies a
third-party-style worker target in another folder, with the digest of the script it runs.

Affordable on this machine: the runtime dependencies are downloaded once into a wheelhouse
(``pip download``, from pip's cache after the first time) and installed with ``--no-index``
and ``--no-compile`` into a venv made ``--without-pip`` (the project venv's pip installs into
it with ``--python``): measured 2 s for the venv and 44 s for the install at load 24, against
87 s and 85 s with ensurepip and bytecode compilation (bench/README.md has the figures)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import venv
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from conformance.reports.attestation import ENVELOPE_FILE, STATEMENT_FILE
from conformance.reports.certificate import ALLURE_VERSION, allure_binary

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
            if k not in ("PYTHONPATH", "CONFORMANCE_GOLDEN_DIR", "FAKEBROKER_SCHEMAS",
                         "VIRTUAL_ENV")}


def run(*cmd: str | Path, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=clean_env())


@dataclass(frozen=True)
class Built:
    wheel: Path
    wheelhouse: Path  # the runtime dependencies' wheels, and pip's


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The wheel of a clean clone (nothing beside it), and a wheelhouse of what it needs."""
    base = tmp_path_factory.mktemp("build")
    clone = run("git", "clone", "-q", ROOT, base / "src", cwd=base)
    assert clone.returncode == 0, clone.stderr
    assert not (base / "shared").exists()
    made = run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", base / "dist", base / "src", cwd=base)
    assert made.returncode == 0, f"the wheel did not build (hatchling from pip's cache or PyPI):\n{made.stderr[-3000:]}"
    [wheel] = (base / "dist").glob("connect_conformance-*.whl")
    got = run(sys.executable, "-m", "pip", "download", "-q", "-d", base / "wheelhouse", wheel, "pip", cwd=base)
    assert got.returncode == 0, got.stderr[-3000:]
    return Built(wheel, base / "wheelhouse")


def fresh_venv(where: Path, wheelhouse: Path, *packages: str | Path) -> Path:
    """A venv of its own (no system site-packages) with ``packages`` from the wheelhouse
    only; its bin folder."""
    venv.EnvBuilder(with_pip=False).create(where)
    inst = run(sys.executable, "-m", "pip", "--python", where / "bin" / "python", "install", "-q", "--no-compile",
               "--no-index", "--find-links", wheelhouse, *packages, cwd=where)
    assert inst.returncode == 0, inst.stderr[-3000:]
    return where / "bin"


@pytest.fixture(scope="module")
def installed(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv's bin folder with the wheel and its runtime dependencies, nothing else."""
    return fresh_venv(tmp_path_factory.mktemp("install") / "venv", built.wheelhouse, built.wheel)


def test_the_commands_run_and_every_module_imports(installed: Path, tmp_path: Path) -> None:
    for command in ("conformance", "fakebroker"):
        r = run(installed / command, "--version", cwd=tmp_path)
        assert r.returncode == 0 and "(connect-conformance)" in r.stdout, (command, r.stdout, r.stderr)
    # Every module imports with the runtime dependencies alone, but the Spark pipeline's
    # (the `spark` extra) and FakeBrokerContainer's (the `containers` extra: testcontainers).
    r = run(installed / "python", "-c", "import importlib, pkgutil, conformance, fakebroker\n"
            "for pkg in (conformance, fakebroker):\n"
            "    for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.'):\n"
            "        if not m.name.startswith(('conformance.pipeline.', 'fakebroker.containers.fakebroker_container')):\n"
            "            importlib.import_module(m.name)\n"
            "print(conformance.__file__)", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip().startswith(str(installed.parent)), r.stdout  # not the checkout
    # The golden transcripts ship in the wheel: a coordinator run replays them all.
    r = run(installed / "python", "-c", "from conformance.harness.golden import golden_dir; print(golden_dir())", cwd=tmp_path)
    shipped = Path(r.stdout.strip())
    assert shipped.is_relative_to(installed.parent) and (shipped / "rules.json").is_file(), r
    assert sorted(p.name for p in shipped.glob("*.jsonl")) == sorted(
        p.name for p in (ROOT / "fixtures" / "golden").glob("*.jsonl"))
    # The data pipeline is the `spark` extra: without it, one line saying so, no traceback.
    r = run(installed / "conformance", "audit", ROOT / "fixtures" / "golden" / "CLS-JOIN-03.jsonl", cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr[-2000:]
    assert "pip install 'connect-conformance[spark]'" in r.stderr
    # pytest and its plugins come with it: the plugin route works too.
    r = run(installed / "python", "-m", "pytest", "--pyargs", "conformance", "--help", cwd=tmp_path)
    assert r.returncode == 0 and "--conformance-target=FILE" in r.stdout and "--alluredir" in r.stdout


def my_worker(folder: Path) -> Path:
    """The bundled draft worker's target pointed at a script beside it (a path relative to the
    target file): a worker of one's own in ``folder``."""
    folder.mkdir(parents=True)
    (folder / "my_worker.py").write_text(MY_WORKER)
    target = DRAFT_WORKER.read_text().replace("{python} -m conformance.workers.draft_worker", "{python} my_worker.py")
    target = target.replace('name = "draft-worker"', 'name = "my-worker"')
    assert "{python} my_worker.py" in target
    (folder / "my-worker.toml").write_text(target)
    return folder / "my-worker.toml"


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


def test_the_github_examples_own_steps_run_outside_the_checkout(built: Built, tmp_path: Path) -> None:
    """examples/ci/github-actions.yml's shell steps, as written, in order, by bash -e (the
    runner's shell) in a repository of one's own whose worker is at the example's
    CONFORMANCE_TARGET, with a Python that has nothing but pip (setup-python's). As far as
    this machine allows: `uses:` steps are the runner's (the checkout is the folder, Java and
    Node are installed); CONFORMANCE_PACKAGE is the clean clone's wheel (the example's other
    form: no repository to fetch from here) installed from the wheelhouse (PIP_NO_INDEX);
    `npm install --global` is recorded, not run (this machine's global npm is not the test's),
    and ALLURE names the set-up's allure-commandline of the same version."""
    job = yaml.safe_load((ROOT / "examples" / "ci" / "github-actions.yml").read_text())["jobs"]["conformance"]
    repo = tmp_path / "my-repo"
    my_worker((repo / job["env"]["CONFORMANCE_TARGET"]).parent)
    bin_dir = fresh_venv(tmp_path / "python", built.wheelhouse, "pip")
    shims = tmp_path / "shims"
    shims.mkdir()
    npm = shims / "npm"
    npm.write_text(f"#!/bin/sh\necho \"$@\" >> {tmp_path / 'npm-calls'}\n")
    npm.chmod(npm.stat().st_mode | stat.S_IEXEC)
    allure = allure_binary()
    assert allure is not None, "allure-commandline not found: run .ci/setup.sh"
    key = Ed25519PrivateKey.generate().private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                     serialization.NoEncryption()).decode()
    github_env = tmp_path / "github-env"
    github_env.touch()
    env: dict[str, Any] = {**clean_env(), **job["env"], "CONFORMANCE_PACKAGE": str(built.wheel),
                           "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(built.wheelhouse), "ALLURE": allure,
                           "PATH": os.pathsep.join([str(bin_dir), str(shims), os.environ["PATH"]]),
                           "RUNNER_TEMP": str(tmp_path), "GITHUB_ENV": str(github_env)}
    secrets = {"${{ secrets.CONFORMANCE_SIGNING_KEY }}": key}
    ran = []
    for step in job["steps"]:
        if "run" not in step:
            continue
        if step.get("if") == "${{ env.CONFORMANCE_REAL_KAFKA == 'true' }}":
            if env["CONFORMANCE_REAL_KAFKA"] != "true":
                continue
        assert "${{" not in step["run"], step  # scripts read variables, not expressions
        step_env = {k: secrets.get(v, v) for k, v in step.get("env", {}).items()}
        r = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=repo, env={**env, **step_env},
                           capture_output=True, text=True, timeout=1200)
        assert r.returncode == 0, (step.get("name"), r.stdout[-3000:], r.stderr[-3000:])
        env.update(line.split("=", 1) for line in github_env.read_text().splitlines() if "=" in line)
        ran.append(step.get("name"))
    assert ran == ["Install the conformance suite and Allure's report generator", "Signing key", "conformance run"]
    assert (tmp_path / "npm-calls").read_text().split() == ["install", "--global", f"allure-commandline@{ALLURE_VERSION}"]
    # A worker of one's own certified from outside the checkout, named by the digest of the
    # script its command runs (found beside its target file, not in the repository's root).
    reports = repo / "reports"
    cert = json.loads((reports / "certificate.json").read_text())
    assert cert["verdict"] == "CERTIFIED" and cert["left_out"] == [] and cert["run_id"], cert["verdict"]
    art = cert["provenance"]["artefact"]
    assert art["chosen"].startswith("the script the command runs") and art["sha256"], art
    assert cert["provenance"]["suite"]["commit"] is None  # not a checkout
    statement = json.loads((reports / STATEMENT_FILE).read_text())
    assert statement["subject"][0]["digest"]["sha256"] == art["sha256"]
    for f in ("junit.xml", ENVELOPE_FILE, "allure-report/index.html"):
        assert (reports / f).is_file(), f
    assert (reports / "allure-report" / "history" / "history-trend.json").is_file()  # what the cache keeps
