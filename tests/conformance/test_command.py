"""A target's command is read relative to the target file: its script or jar is found, or
refused before anything runs, and it is that file, never the interpreter or ``java``, whose
digest the certificate gives."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance.harness.command import CommandError, launched, preflight
from conformance.reports.provenance import ArtefactMissing, artefact, artefact_files, digest_files, require_artefact
from conformance.harness.target import load_target
from fakebroker.exit_codes import EXIT_USAGE

ROOT = Path(__file__).resolve().parents[2]
WORKER = """name = "mine"
kind = "worker"
protocols = ["connect"]
[start]
command = "{command}"
"""


def target_file(folder: Path, command: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "my-worker.toml"
    path.write_text(WORKER.replace("{command}", command))
    return path


def test_a_script_is_found_beside_its_target_file_and_digested_with_its_imports(tmp_path: Path) -> None:
    mine = tmp_path / "my-worker"
    path = target_file(mine, "{python} -u my_worker.py --bootstrap {bootstrap}")
    (mine / "helper.py").write_text("X = 1\n")
    (mine / "my_worker.py").write_text("import helper\nimport json\n")
    target = load_target(path)
    preflight(target)
    run = launched(target)
    assert run is not None and (run.kind, run.file) == ("script", mine / "my_worker.py")
    files, root, how = artefact_files(target)
    assert set(files) == {mine / "my_worker.py", mine / "helper.py"}, files  # not json (stdlib), not python
    assert how.startswith("the script the command runs")
    first = artefact(files, root, how)["sha256"]
    (mine / "helper.py").write_text("X = 2\n")
    assert artefact(*artefact_files(target))["sha256"] != first  # the digest follows what runs


def test_a_jar_is_the_artefact_not_java(tmp_path: Path) -> None:
    if shutil.which("java") is None:
        pytest.fail("java not found: run .ci/setup.sh")
    mine = tmp_path / "w"
    target = load_target(target_file(mine, "java -Xmx256m -jar build/worker.jar --bootstrap {bootstrap}"))
    with pytest.raises(CommandError, match=r"the jar .*/w/build/worker.jar is not there .*rule command-exists"):
        preflight(target)
    (mine / "build").mkdir()
    (mine / "build" / "worker.jar").write_bytes(b"PK\x03\x04 not really")
    preflight(target)
    files, _, how = artefact_files(target)
    assert files == [mine / "build" / "worker.jar"] and how == "the jar the command runs (java -jar)"
    assert artefact(files, None, how)["sha256"] == digest_files(files)


@pytest.mark.parametrize("command, says", [
    ("./bin/my-worker --bootstrap {bootstrap}", "the program {dir}/bin/my-worker is not there"),
    ("no-such-worker-program --bootstrap {bootstrap}", "the program no-such-worker-program is not there"),
    ("{python} -m no_such_module_here --bootstrap {bootstrap}", "no module no_such_module_here importable"),
])
def test_a_missing_program_or_module_is_refused_naming_it(tmp_path: Path, command: str, says: str) -> None:
    target = load_target(target_file(tmp_path / "w", command))
    with pytest.raises(CommandError, match="rule command-exists") as e:
        preflight(target)
    assert says.format(dir=tmp_path / "w") in str(e.value) and "start.command" in str(e.value)


def test_an_interpreter_alone_is_nothing_to_certify(tmp_path: Path) -> None:
    """``{python} -c ...`` runs no file of the implementation: no digest, so the run is
    refused unless told --no-artefact-digest (the certificate then says so)."""
    target = load_target(target_file(tmp_path / "w", "{python} -c 'print(1)' {bootstrap}"))
    preflight(target)
    files, _, how = artefact_files(target)
    assert files == [] and how.startswith("only an interpreter")
    with pytest.raises(ArtefactMissing, match="--no-artefact-digest"):
        require_artefact(target, waived=False)
    require_artefact(target, waived=True)


def test_run_refuses_a_missing_script_in_seconds_from_the_parent_folder(tmp_path: Path) -> None:
    """The issue's layout: ``conformance run --target myworker/my-worker.toml`` from the folder
    above, the script not there: one line naming its path, before any test process starts."""
    target_file(tmp_path / "myworker", "{python} my_worker.py --bootstrap {bootstrap}")
    started = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "conformance.cli", "run", "--target", "myworker/my-worker.toml",
                        "--reports", str(tmp_path / "reports")], cwd=tmp_path, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == EXIT_USAGE and time.monotonic() - started < 30
    [line] = r.stderr.splitlines()
    assert f"the script {tmp_path / 'myworker' / 'my_worker.py'} is not there" in line, line
    assert not (tmp_path / "reports").exists()


def test_the_bundled_targets_pass_the_preflight_and_have_a_digest() -> None:
    for path in sorted((ROOT / "fixtures" / "targets").glob("*.toml")):
        target = load_target(path)
        preflight(target)
        files, _, how = artefact_files(target)  # jars: resolved into the cache by .ci/setup.sh
        assert files, f"{path.name}: {how}"
