"""The copy-paste CI in examples/ci/: the GitHub Actions workflow passes actionlint, the
GitLab job has the keys GitLab needs, and the command both run is a working ``conformance
run`` whose outputs are the paths the publishing steps pick up."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from conformance.reports.attestation import ENVELOPE_FILE, STATEMENT_FILE
from conformance.reports.certificate import ALLURE_REPORT
from fakebroker.exit_codes import EXIT_PARTIAL

ROOT = Path(__file__).resolve().parents[2]
CI = ROOT / "examples" / "ci"
GITHUB = CI / "github-actions.yml"
GITLAB = CI / "gitlab-ci.yml"
VENV_BIN = Path(sys.executable).parent


def actionlint() -> str:
    found = shutil.which("actionlint", path=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    if found is None:
        pytest.fail("actionlint not found in the venv nor on PATH: run .ci/setup.sh (it builds actionlint "
                    "with Go from the module proxy into .venv/bin)")
    return found


def lint(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([actionlint(), "-no-color", "-oneline", str(path)], capture_output=True, text=True,
                          timeout=120)


def test_the_github_workflow_passes_actionlint() -> None:
    r = lint(GITHUB)
    assert r.returncode == 0 and not r.stdout.strip(), r.stdout + r.stderr


@pytest.mark.parametrize("old, new, says", [
    ("if: ${{ !cancelled() }}", "if: ${{ !cancelled( }}", "expression"),  # a broken expression
    ("actions/upload-artifact@v4", "actions/upload-artifact@v4\n        with_typo: 1", "with_typo"),
    ("    needs: conformance\n", "    needs: conformance-job\n", "conformance-job"),
])
def test_actionlint_would_catch_a_broken_copy(tmp_path: Path, old: str, new: str, says: str) -> None:
    """The lint is live: the same file with one mistake does not pass."""
    text = GITHUB.read_text()
    assert old in text
    broken = tmp_path / "workflow.yml"
    broken.write_text(text.replace(old, new, 1))
    r = lint(broken)
    assert r.returncode == 1 and says in r.stdout, r.stdout + r.stderr


def github_steps() -> list[dict[str, Any]]:
    return yaml.safe_load(GITHUB.read_text())["jobs"]["conformance"]["steps"]


def step(uses_prefix: str) -> dict[str, Any]:
    (found,) = [s for s in github_steps() if s.get("uses", "").startswith(uses_prefix)]
    return found


def test_the_github_workflow_publishes_what_the_run_writes() -> None:
    (run,) = [s for s in github_steps() if s.get("name") == "conformance run"]
    assert "--junitxml reports/junit.xml" in run["run"] and "--reports reports" in run["run"]
    assert step("mikepenz/action-junit-report@")["with"]["report_paths"] == "reports/junit.xml"
    assert step("actions/upload-artifact@")["with"]["path"] == "reports/"
    assert step("actions/upload-pages-artifact@")["with"]["path"] == "reports/" + str(Path(ALLURE_REPORT).parent)
    for s in ("mikepenz/action-junit-report@", "actions/upload-artifact@", "actions/upload-pages-artifact@"):
        assert "!cancelled()" in step(s)["if"]  # published when the run did not certify, too


def test_the_gitlab_job_has_the_keys_gitlab_needs() -> None:
    doc = yaml.safe_load(GITLAB.read_text())
    job, pages = doc["connect-conformance"], doc["pages"]
    assert {job["stage"], pages["stage"]} <= set(doc["stages"])
    assert doc["stages"].index(job["stage"]) < doc["stages"].index(pages["stage"])
    assert job["image"].startswith("python:3.1")
    assert {"CONFORMANCE_TARGET", "CONFORMANCE_PACKAGE", "CONFORMANCE_REAL_KAFKA"} <= set(job["variables"])
    assert any("pip install \"$CONFORMANCE_PACKAGE\"" in line for line in job["before_script"])
    (command,) = [line for line in job["script"] if line.startswith("conformance run")]
    assert "--junitxml reports/junit.xml" in command
    assert job["artifacts"]["when"] == "always" and job["artifacts"]["paths"] == ["reports/"]
    assert job["artifacts"]["reports"]["junit"] == "reports/junit.xml"
    assert pages["needs"] == [{"job": "connect-conformance", "artifacts": True}]
    assert f"cp -r reports/{Path(ALLURE_REPORT).parent}/. public/" in pages["script"][0]
    assert pages["artifacts"]["paths"] == ["public"]


def test_the_examples_install_what_exists_and_keep_caches_and_history() -> None:
    """No `connect-conformance==0.1.0` (no index has it): the suite's repository at a tag, or
    a wheel; Java set up; the jars' cache and Allure's history kept between runs, at the
    paths the suite uses (fakebroker.cache_dir, certificate.render_allure)."""
    history = f"reports/{Path(ALLURE_REPORT).parent}/history"
    env = yaml.safe_load(GITHUB.read_text())["jobs"]["conformance"]["env"]
    job = yaml.safe_load(GITLAB.read_text())["connect-conformance"]
    for package in (env["CONFORMANCE_PACKAGE"], job["variables"]["CONFORMANCE_PACKAGE"]):
        assert "==" not in package and " @ git+https://" in package, package
    assert step("actions/setup-java@")["with"]["java-version"] == "17"
    caches = [s["with"]["path"] for s in github_steps() if s.get("uses", "").startswith("actions/cache@")]
    assert any("~/.cache/connect-conformance" in p for p in caches) and history in caches, caches
    assert job["variables"]["CONNECT_CONFORMANCE_CACHE"] == "$CI_PROJECT_DIR/.cache/connect-conformance"
    paths = [p for c in job["cache"] for p in c["paths"]]
    assert ".cache/" in paths and history + "/" in paths
    assert any("openjdk-17" in line and "maven" in line for line in job["before_script"])


def the_commands() -> dict[str, str]:
    (gh,) = [s["run"] for s in github_steps() if s.get("name") == "conformance run"]
    gl = yaml.safe_load(GITLAB.read_text())["connect-conformance"]["script"][0]
    return {"github": gh, "gitlab": gl}


@pytest.mark.parametrize("ci", ["github", "gitlab"])
def test_the_command_the_ci_runs_works_and_writes_what_it_publishes(ci: str, tmp_path: Path) -> None:
    """The example's own command line, run by bash with its variables set (the bundled fake
    broker as the target, narrowed to one case so that it is quick; a signing key set the
    way each CI sets it)."""
    key = tmp_path / "key.pem"
    key.write_bytes(Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    key_var = {"github": "CONFORMANCE_SIGNING_KEY_FILE", "gitlab": "CONFORMANCE_SIGNING_KEY"}[ci]
    command = the_commands()[ci] + " -k CLS-JOIN-03 --no-html"
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}", key_var: str(key),
           "CONFORMANCE_TARGET": str(ROOT / "fixtures" / "targets" / "fakebroker.toml")}
    r = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == EXIT_PARTIAL, r.stdout[-2000:] + r.stderr[-2000:]
    for f in ("junit.xml", "certificate.json", "certificate.md", STATEMENT_FILE, ENVELOPE_FILE):
        assert (tmp_path / "reports" / f).is_file(), f
