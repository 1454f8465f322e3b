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
import shlex
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .target import Target

PACKAGE_ROOT = Path(__file__).resolve().parent.parent


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
    """(files, the root their names are relative to, how they were chosen)."""
    if target.artefacts:
        base = Path(target.path).resolve().parent
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
    if target.command:
        return _command_files(target.command)
    return [], None, f"an external coordinator at {target.bootstrap}: nothing local to digest"


def _command_files(command: str) -> tuple[list[Path], Path | None, str]:
    words = shlex.split(command)
    if "-m" in words[:-1]:
        import importlib.util
        module = words[words.index("-m") + 1]
        try:
            spec = importlib.util.find_spec(module)
        except ImportError:
            spec = None
        origin = spec.origin if spec is not None else None
        if spec is not None and spec.submodule_search_locations:  # a package run as __main__
            main = importlib.util.find_spec(module + ".__main__")
            origin = main.origin if main is not None else origin
        if origin:
            return _imported_files(Path(origin)), None, (
                f"the module the command runs (-m {module}) and every non-stdlib module it imports")
        return [], None, f"module {module} not found"
    program = find_program(words[0]) if words and "{" not in words[0] else None
    if program:
        return [Path(program).resolve()], None, "the program the command runs"
    return [], None, "nothing local to digest"


def find_program(name: str) -> str | None:
    """``name`` found in this Python environment's bin folder first (where .ci/setup.sh
    builds programs such as kfake-broker), then on PATH: a venv's python run without the
    venv activated still finds what it installed."""
    return shutil.which(name, path=os.pathsep.join((str(Path(sys.executable).parent),
                                                    os.environ.get("PATH", os.defpath))))


def _imported_files(script: Path) -> list[Path]:
    """``script`` and the files of every module it imports, statically and transitively,
    outside the standard library (the worker's own helpers, its client library): what runs."""
    import modulefinder
    import sysconfig
    stdlib = sysconfig.get_paths()["stdlib"]
    finder = modulefinder.ModuleFinder()
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

    from .catalogue import CATALOGUE_FILE, default_catalogue
    path = default_schema_dir() / CATALOGUE_FILE
    return {"file": CATALOGUE_FILE, "sha256": sha256_file(path), "requirements": len(default_catalogue())}


def spec_documents() -> list[dict[str, Any]]:
    """Every document the catalogue cites, by title (the spec README's description of it,
    else its first heading or line), with its sha256 when the document is at hand."""
    from .catalogue import default_catalogue, shared_dir
    base = shared_dir()
    titles = _readme_titles(base / "spec" / "README.md") if base else {}
    out = []
    for file in sorted({r.source.file for r in default_catalogue()}):
        path = base / file if base else None
        present = path is not None and path.is_file()
        title = titles.get(Path(file).name) or (_first_heading(path) if present else None) or file
        out.append({"title": title, "file": file, "sha256": sha256_file(path) if present else None})
    return out


def _readme_titles(readme: Path) -> dict[str, str]:
    """``| `file` | what it is | ...`` rows of the spec folder's README."""
    if not readme.is_file():
        return {}
    rows = re.findall(r"^\|\s*`([^`]+)`\s*\|\s*([^|]+?)\s*\|", readme.read_text(encoding="utf-8"), re.M)
    return dict(rows)


def _first_heading(path: Path) -> str | None:
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        text = line.strip().lstrip("#").strip()
        if text and text != "...":
            return text
    return None


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


def provenance(target: Target, started: float, finished: float) -> dict[str, Any]:
    from fakebroker import __version__
    files, root, how = artefact_files(target)
    out: dict[str, Any] = {
        "started": utc_iso(started), "finished": utc_iso(finished),
        "duration_s": round(finished - started, 1),
        "suite": {"name": "connect-conformance", "version": __version__, "commit": git_commit()},
        "catalogue": catalogue_info(),
        "spec_documents": spec_documents(),
        "artefact": artefact(files, root, how),
        "ci": ci_run(),
    }
    java = java_version(files)
    if java is not None:
        out["java"] = java
    return out
