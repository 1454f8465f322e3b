"""What a target's command runs, read relative to the target file.

A target's commands (``command``, ``seed_command``, ``host_command``) run in the folder of
the target file, so ``{python} my_worker.py`` or ``java -jar build/worker.jar`` in
``myworker/my-worker.toml`` mean ``myworker/my_worker.py`` and ``myworker/build/worker.jar``
wherever ``conformance`` is started from (as ``[implementation] artefacts`` globs are).

``launched`` names what a command runs: the interpreter or program, and the file that is
the implementation (the script, the jar, the module run with ``-m``, or a program of its
own). ``preflight`` refuses, before any case runs, a command whose program or file is not
there, naming the path; ``conformance.reports.provenance`` digests the same file, never the
interpreter or ``java``.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from .target import BROKER_PLACEHOLDERS, PLACEHOLDERS, Target

# Programs that run the implementation rather than being it: their file is the artefact.
INTERPRETER = re.compile(r"^(python[0-9.]*|pypy[0-9.]*|java|node|deno|bun|ruby|perl|bash|sh|dash|zsh)$")
# Where the harness's own packages live when it runs from a checkout (not installed): a
# ``{python} -m conformance.workers...`` child must import them from any folder.
PACKAGE_PARENT = Path(__file__).resolve().parents[2]


class CommandError(ValueError):
    """A command whose program or file is missing: one line naming the field and the path."""


@dataclass(frozen=True)
class Launched:
    """What one command runs. ``kind``: script | jar | module | program | interpreter."""

    field: str            # start.command, start.seed_command, start.host_command
    program: str          # the first word, as rendered
    program_path: Path | None
    kind: str
    file: Path | None     # the implementation's file (script, jar, program); None for a module
    module: str | None = None


def base_dir(target: Target) -> Path:
    """The folder the target's commands run in and its relative paths are read from."""
    return Path(target.path).resolve().parent


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a command's process: ours, plus, from a checkout, the folder
    holding the harness's packages on PYTHONPATH (commands run in the target's folder)."""
    env = {**os.environ, **(extra or {})}
    if (PACKAGE_PARENT / "pyproject.toml").is_file():
        paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
        if str(PACKAGE_PARENT) not in paths:
            env["PYTHONPATH"] = os.pathsep.join([*paths, str(PACKAGE_PARENT)])
    return env


def _sample_words(template: str) -> list[str]:
    """The template's words with every placeholder filled in (optional parts kept):
    ``{python}`` as this interpreter, the rest with stand-ins that are not paths."""
    text = re.sub(r"\[([^\[\]]*)\]", r"\1", template)
    values = {k: "0" for k in PLACEHOLDERS | BROKER_PLACEHOLDERS}  # a worker's, or a coordinator's own broker
    values["python"] = shlex.quote(sys.executable)
    return shlex.split(text.format(**values))


def launched(target: Target, field: str = "command") -> Launched | None:
    template = getattr(target, field)
    if template is None:
        return None
    words = _sample_words(template)
    if not words:
        raise CommandError(f"{target.path}: start.{field}: empty (rule command-exists)")
    base = base_dir(target)
    program = words[0]
    found = _program(program, base)
    name = Path(program).name
    if found is None or not INTERPRETER.match(name):
        return Launched(field, program, found, "program", found)
    rest = words[1:]
    if name.startswith("java"):
        jar = _after(rest, "-jar")
        return Launched(field, program, found, "jar" if jar else "interpreter", _resolve(jar, base) if jar else None)
    module = _after(rest, "-m")
    if module is not None:
        return Launched(field, program, found, "module", None, module)
    script = next((w for i, w in enumerate(rest) if not w.startswith("-") and (i == 0 or rest[i - 1] not in ("-X", "-W"))), None)
    if script is None or _after(rest, "-c") is not None:
        return Launched(field, program, found, "interpreter", None)
    return Launched(field, program, found, "script", _resolve(script, base))


def _after(words: list[str], flag: str) -> str | None:
    return words[words.index(flag) + 1] if flag in words[:-1] else None


def _resolve(path: str, base: Path) -> Path:
    p = Path(os.path.expanduser(path))
    return p if p.is_absolute() else base / p


def _program(program: str, base: Path) -> Path | None:
    """A program named with a slash is a path (from the target's folder); else it is
    looked up on PATH."""
    if "/" in program:
        p = _resolve(program, base)
        return p.resolve() if p.is_file() and os.access(p, os.X_OK) else None
    found = find_program(program)
    return Path(found).resolve() if found else None


def find_program(name: str) -> str | None:
    """``name`` found in this Python environment's bin folder first (where .ci/setup.sh
    builds programs such as kfake-broker), then on PATH: a venv's python run without the
    venv activated still finds what it installed."""
    return shutil.which(name, path=os.pathsep.join((str(Path(sys.executable).parent),
                                                    os.environ.get("PATH", os.defpath))))


def preflight(target: Target) -> None:
    """Every command's program and file exist: CommandError naming the field and the path
    otherwise, in milliseconds, before any process or case starts."""
    for field in ("command", "seed_command", "host_command"):
        run = launched(target, field)
        if run is None:
            continue
        where = f"{target.path}: start.{field}"
        if run.program_path is None:
            shown = _resolve(run.program, base_dir(target)) if "/" in run.program else run.program
            raise CommandError(f"{where}: the program {shown} is not there (not an executable file"
                               f"{'' if '/' in run.program else ' on PATH'}) (rule command-exists)")
        if run.kind in ("script", "jar") and run.file is not None and not run.file.is_file():
            raise CommandError(f"{where}: the {run.kind} {run.file} is not there (paths are read from "
                               f"the target file's folder, {base_dir(target)}) (rule command-exists)")
        if run.kind == "module" and run.module and not _module_found(run.module, base_dir(target)):
            raise CommandError(f"{where}: no module {run.module} importable (from {base_dir(target)} "
                               f"or this Python's path) (rule command-exists)")


def _module_found(module: str, base: Path) -> bool:
    """``-m module`` as the command will run it: from the target's folder or this Python's path."""
    if (base / (module.replace(".", "/") + ".py")).is_file() or (base / module.replace(".", "/")).is_dir():
        return True
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False
