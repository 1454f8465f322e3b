"""Where a certificate comes from: when, by which suite and catalogue, against which spec
documents, on which exact artefact, in which CI run.

Every figure is something a reader can check again: dates in UTC ISO 8601, the suite's
version and git commit, the sha256 of the requirement catalogue, each spec document by its
title with its sha256, and the sha256 of the files that actually ran (a target's declared
``[implementation] artefacts``, else the module its command runs with ``-m`` and every
non-stdlib module it imports, else the program it runs; for the builtin fake broker, the
package's files).
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..harness.command import Launched, base_dir, launched
from ..harness.target import Target

PACKAGE_ROOT = Path(__file__).resolve().parents[2]


def utc_iso(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def digest_files(files: list[Path], root: Path | None = None) -> str:
    """One sha256 over several files: each file's name (relative to ``root``) and digest,
    sorted by name, so the result does not depend on the order files were found in."""
    lines = sorted(f"{(f.relative_to(root) if root else f.name)}  {sha256_file(f)}\n" for f in files)
    return hashlib.sha256("".join(lines).encode()).hexdigest()


# ---------------------------------------------------------------- the tested artefact

def artefact_files(target: Target) -> tuple[list[Path], Path | None, str]:
    """(files, the root their names are relative to, how they were chosen): what ran as the
    implementation, never the interpreter or ``java`` that ran it."""
    if target.artefacts:
        base = base_dir(target)
        found: set[Path] = set()
        for pattern in target.artefacts:
            expanded = os.path.expanduser(pattern)
            found.update(Path(p) for p in glob.glob(expanded if os.path.isabs(expanded) else str(base / expanded)))
        return sorted(p for p in found if p.is_file()), None, "declared: " + ", ".join(target.artefacts)
    if target.builtin:
        import fakebroker
        root = Path(fakebroker.__file__).resolve().parent
        return sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                      and p.suffix != ".pyc"), root.parent, f"the builtin {target.builtin} package"
    if target.launch == "real-kafka":
        from fakebroker.realkafka.provision import KAFKA_VERSION, cached_libs
        libs = cached_libs()
        if libs is not None:
            return sorted(libs.glob("*.jar")), None, f"the jars of the Apache Kafka {KAFKA_VERSION} the harness launches"
        return [], None, "the launched Kafka's jars are not resolved (python -m fakebroker.realkafka resolve)"
    run = launched(target)
    if run is not None:
        return _launched_files(run, base_dir(target))
    return [], None, f"an external coordinator at {target.bootstrap}: nothing local to digest"


def _launched_files(run: Launched, base: Path) -> tuple[list[Path], Path | None, str]:
    if run.kind == "script" and run.file is not None and run.file.is_file():
        return _imported_files(run.file, base), None, "the script the command runs and every non-stdlib module it imports"
    if run.kind == "jar" and run.file is not None and run.file.is_file():
        return [run.file], None, "the jar the command runs (java -jar)"
    if run.kind == "module" and run.module:
        origin = _module_origin(run.module, base)
        if origin is not None:
            return _imported_files(origin, base), None, (
                f"the module the command runs (-m {run.module}) and every non-stdlib module it imports")
        return [], None, f"module {run.module} not found"
    if run.kind == "program" and run.file is not None:
        dist = _distribution_of(run.file)
        if dist is not None:
            name, files = dist
            return files, None, f"the files of the installed package {name} whose command it is"
        return [run.file], None, "the program the command runs"
    return [], None, f"only an interpreter ({run.program}): no file of the implementation to digest"


def _module_origin(module: str, base: Path) -> Path | None:
    """The file ``python -m module`` runs from ``base`` (the command's folder) or this
    Python's path: a module's file, a package's ``__main__``."""
    import importlib.util
    rel = Path(*module.split("."))
    for candidate in (base / rel.with_suffix(".py"), base / rel / "__main__.py"):
        if candidate.is_file():
            return candidate
    try:
        spec = importlib.util.find_spec(module)
        if spec is not None and spec.submodule_search_locations:  # a package run as __main__
            spec = importlib.util.find_spec(module + ".__main__") or spec
    except (ImportError, ValueError):
        return None
    return Path(spec.origin) if spec is not None and spec.origin and Path(spec.origin).is_file() else None


def _distribution_of(program: Path) -> tuple[str, list[Path]] | None:
    """The installed distribution (a wheel's files) whose console script ``program`` is."""
    from importlib import metadata
    for dist in metadata.distributions():
        for f in dist.files or ():
            if f.name == program.name and Path(str(dist.locate_file(f))).resolve() == program:
                files = [Path(str(dist.locate_file(x))).resolve() for x in dist.files or ()]
                return dist.metadata["Name"], sorted({x for x in files if x.is_file() and x.suffix != ".pyc"})
    return None


def _imported_files(script: Path, base: Path) -> list[Path]:
    """``script`` and the files of every module it imports, statically and transitively,
    outside the standard library (the worker's own helpers, its client library): what runs.
    Imports are looked up as the command finds them: its folder first."""
    import modulefinder
    import sys
    import sysconfig
    stdlib = sysconfig.get_paths()["stdlib"]
    finder = modulefinder.ModuleFinder(path=[str(script.parent), str(base), *sys.path])
    try:
        finder.run_script(str(script))
    except (ImportError, SyntaxError, OSError):
        return [script]
    found = {Path(m.__file__) for m in finder.modules.values()
             if m.__file__ and not m.__file__.startswith(stdlib) and Path(m.__file__).is_file()}
    return sorted(found | {script})


def artefact(files: list[Path], root: Path | None, how: str) -> dict[str, Any]:
    out: dict[str, Any] = {"chosen": how, "files": len(files),
                           "sha256": digest_files(files, root) if files else None}
    if len(files) <= 3:
        out["names"] = [str(f) for f in files]
    return out


def java_version(files: list[Path]) -> str | None:
    """The Java runtime of a Java target (one whose artefacts are jars)."""
    if not any(f.suffix == ".jar" for f in files):
        return None
    from fakebroker.realkafka.provision import JavaMissing, find_java
    try:
        java = find_java()
    except JavaMissing as e:
        return f"not found: {e}"
    return f"{java.version} ({java.path})"


# ---------------------------------------------------------------- the suite and its sources

def git_commit() -> str | None:
    """The checkout's commit (``+dirty`` with uncommitted changes); None outside a checkout."""
    if not (PACKAGE_ROOT / ".git").exists() or shutil.which("git") is None:
        return None
    try:
        head = subprocess.run(["git", "-C", str(PACKAGE_ROOT), "rev-parse", "HEAD"],
                              capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "-C", str(PACKAGE_ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if head.returncode != 0:
        return None
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def catalogue_info() -> dict[str, Any]:
    from fakebroker.protocol import default_schema_dir

    from ..catalogue.requirements import CATALOGUE_FILE, default_catalogue
    path = default_schema_dir() / CATALOGUE_FILE
    return {"file": CATALOGUE_FILE, "sha256": sha256_file(path), "requirements": len(default_catalogue())}


def spec_documents() -> list[dict[str, Any]]:
    """Every public document the catalogue cites: id, title and where to read it."""
    from ..catalogue.requirements import default_catalogue
    return [{"id": d.id, "title": d.title, "url": d.url, "kind": d.kind} for d in default_catalogue().cited()]


def ci_run() -> dict[str, str] | None:
    """The CI run from the standard variables (GitHub Actions, GitLab, Jenkins)."""
    env = os.environ
    if env.get("GITHUB_RUN_ID") and env.get("GITHUB_REPOSITORY"):
        server = env.get("GITHUB_SERVER_URL", "https://github.com")
        return {"system": "github-actions",
                "url": f"{server}/{env['GITHUB_REPOSITORY']}/actions/runs/{env['GITHUB_RUN_ID']}"}
    if env.get("CI_JOB_URL"):
        return {"system": "gitlab-ci", "url": env["CI_JOB_URL"]}
    if env.get("BUILD_URL"):
        return {"system": "jenkins", "url": env["BUILD_URL"]}
    if env.get("CI"):
        return {"system": "unknown", "url": ""}
    return None


def implementation_text(name: str, version: str) -> str:
    """"X on kafka-python" + "kafka-python 3.0.12" -> "X on kafka-python 3.0.12": the longest
    end of the name the version starts with is said once."""
    words, vwords = name.split(), version.split()
    for n in range(min(len(words), len(vwords)), 0, -1):
        if words[-n:] == vwords[:n]:
            return " ".join(words + vwords[n:])
    return f"{name} {version}" if version and version != "unknown" else name


def new_run_id(started: float) -> str:
    """A run's name: when it started (UTC) and 8 random hex digits, so two runs of one
    second differ; results.json, the Allure results and the certificate carry it."""
    import secrets
    return datetime.fromtimestamp(started, UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(4)


class ArtefactMissing(ValueError):
    """Nothing to digest as the tested artefact, and no --no-artefact-digest: one line."""


def require_artefact(target: Target, waived: bool) -> None:
    """Before any case runs: a run that could certify names its artefact by digest, or is
    told not to (the certificate then says so)."""
    if waived or target.launch == "real-kafka":  # the harness resolves that Kafka's jars before it starts it
        return
    files, _, how = artefact_files(target)
    if not files:
        raise ArtefactMissing(f"{target.path}: nothing to digest as the tested artefact ({how}): declare "
                              "[implementation] artefacts (globs from the target's folder), or give "
                              "--no-artefact-digest, which the certificate then states (rule artefact-digest)")


def provenance(target: Target, started: float, finished: float, *, waived: bool = False) -> dict[str, Any]:
    from fakebroker import __version__
    files, root, how = artefact_files(target)
    out: dict[str, Any] = {
        "started": utc_iso(started), "finished": utc_iso(finished),
        "duration_s": round(finished - started, 1),
        "suite": {"name": "connect-conformance", "version": __version__, "commit": git_commit()},
        "catalogue": catalogue_info(),
        "spec_documents": spec_documents(),
        "artefact": {**artefact(files, root, how), **({"waived": True} if waived and not files else {})},
        "ci": ci_run(),
    }
    java = java_version(files)
    if java is not None:
        out["java"] = java
    return out
