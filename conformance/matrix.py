"""``conformance matrix``: the worker suite on a list of Apache Kafka Connect releases, on every
protocol each supports, as one table (markdown and JSON) of version x protocol x verdict, the
failing cases and the known bugs (``fixtures/connect/known-bugs.toml``) that explain them.

    conformance matrix --versions 2.4.1,3.0.0,4.2.0 --reports reports/matrix \\
        [--protocols eager,compatible] [-k EXPR] [-n N] [--table docs/connect-matrix.md] [--reuse]

Each cell runs the bundled target of its protocol (``fixtures/targets/apache-connect-<p>.toml``)
with ``connect_version`` set: the same cases, timings and seed as the certified release, only
the jars differ. A release whose workers cannot run in the worker host (before 4.0: log4j 1)
runs a JVM per worker; the cell's target says so and the progress line says why. One cell
runs at a time (each is CPU-heavy); progress is printed as its cases finish.

Exit code: 0 when every failure is one a known bug open in that release explains; 1 when a
failure is not (a regression of the suite or of Connect: look at it); 3 when a cell could not
run (BROKEN cases, no results); 2 usage.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fakebroker.exit_codes import EXIT_BROKEN, EXIT_FAILED, EXIT_OK, EXIT_USAGE
from fakebroker.cli_text import plain

ROOT = Path(__file__).resolve().parents[1]
TARGETS = ROOT / "fixtures" / "targets"
KNOWN_BUGS = ROOT / "fixtures" / "connect" / "known-bugs.toml"
PROTOCOLS = ("eager", "compatible", "sessioned")
# connect.protocol values a release knows: compatible from 2.3.0 (KIP-415), sessioned from
# 2.4.0 (KIP-507); eager always.
SINCE = {"eager": (0, 0, 0), "compatible": (2, 3, 0), "sessioned": (2, 4, 0)}
_PROGRESS = re.compile(r"^\[gw\d+\] \[\s*(\d+)%\] (\S+) ")


class MatrixError(ValueError):
    pass


@dataclass(frozen=True)
class Bug:
    id: str
    title: str
    fixed_in: tuple[tuple[int, int, int], ...]
    cases: frozenset[str]

    def open_in(self, version: tuple[int, int, int]) -> bool:
        """Whether ``version`` lacks the fix: no fix on its line at or before it, and its line
        older than the newest line the fix was first released on."""
        if any(f[:2] == version[:2] and f <= version for f in self.fixed_in):
            return False
        return version[:2] < max(self.fixed_in)[:2]

    @property
    def fixed_text(self) -> str:
        return ", ".join(".".join(map(str, f)) for f in self.fixed_in)


def load_bugs(path: Path = KNOWN_BUGS) -> list[Bug]:
    from fakebroker.realconnect.provision import version_key
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise MatrixError(f"{path}: {e}") from None
    out = []
    for i, b in enumerate(doc.get("bug", [])):
        try:
            out.append(Bug(b["id"], b.get("title", ""), tuple(sorted(version_key(v) for v in b["fixed_in"])),
                           frozenset(b["cases"])))
        except (KeyError, TypeError, ValueError) as e:
            raise MatrixError(f"{path}: bug {i + 1} ({b.get('id', '?')}): {e} (needs id, fixed_in, cases)") from None
    return out


def supported(version: tuple[int, int, int]) -> list[str]:
    return [p for p in PROTOCOLS if version >= SINCE[p]]


def cell_target(version: str, protocol: str, hostable: bool, directory: Path) -> Path:
    """The bundled target of ``protocol`` on Connect ``version``, written into ``directory``;
    without the worker host where the release cannot run in it."""
    text = (TARGETS / f"apache-connect-{protocol}.toml").read_text(encoding="utf-8")
    name = f'name = "apache-connect-{protocol}"'
    if name not in text or "[implementation]\n" not in text:
        raise MatrixError(f"{TARGETS}/apache-connect-{protocol}.toml: no {name} or [implementation]")
    text = text.replace(name, f'name = "apache-connect-{version}-{protocol}"')
    text = text.replace("[implementation]\n", f'[implementation]\nconnect_version = "{version}"\n', 1)
    if not hostable:
        text = "".join(line for line in text.splitlines(keepends=True) if not line.startswith("host_command"))
        text = text.replace("--host {worker_host} ", "")
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"apache-connect-{version}-{protocol}.toml"
    path.write_text(text, encoding="utf-8")
    return path


@dataclass
class Cell:
    version: str
    protocol: str
    verdict: str = "NOT RUN"
    counts: dict[str, Any] = field(default_factory=dict)
    failed: list[dict[str, Any]] = field(default_factory=list)  # {"case", "bugs": [...]}
    broken: list[str] = field(default_factory=list)
    wall_s: float = 0.0
    host: str = ""
    reports: str = ""

    @property
    def unexplained(self) -> list[str]:
        return [f["case"] for f in self.failed if not f["bugs"]]


def explain(case_id: str, version: tuple[int, int, int], bugs: list[Bug]) -> list[dict[str, str]]:
    """The known bugs open in ``version`` that would fail ``case_id`` (``CONN-INC-10[compatible]``
    is case CONN-INC-10)."""
    base = case_id.split("[", 1)[0]
    return [{"id": b.id, "fixed_in": b.fixed_text} for b in bugs if base in b.cases and b.open_in(version)]


def render_markdown(cells: list[Cell], meta: dict[str, Any]) -> str:
    lines = ["# Apache Kafka Connect releases on the worker suite", "",
             f"Generated by `{meta['command']}` on {meta['date']} (suite commit `{meta['suite_commit']}`)"
             + (f"; the cells as run on {meta['ran']['date']} (suite commit `{meta['ran']['suite_commit']}`), their "
                f"failures explained again." if meta.get("ran") else "."),
             "Each row is the bundled `apache-connect-<protocol>` target run with `connect_version` set to the "
             "release. A failing case is explained by the known bugs of `fixtures/connect/known-bugs.toml` open "
             "in that release (fixed in the releases named); **unexplained** marks one none explains.", "",
             "| version | protocol | verdict | MUST pass/fail/broken | SHOULD pass/non-strict | failing cases "
             "(known bugs) | broken | worker host | wall time |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for c in cells:
        m = c.counts.get("MUST", {})
        sh = c.counts.get("SHOULD", {})
        failing = "; ".join(
            f"{f['case']} ({', '.join(b['id'] + ' fixed in ' + b['fixed_in'] for b in f['bugs'])})" if f["bugs"]
            else f"{f['case']} (**unexplained**)" for f in c.failed) or "none"
        lines.append(f"| {c.version} | {c.protocol} | {c.verdict} | {m.get('PASS', 0)}/{m.get('FAIL', 0)}/"
                     f"{m.get('BROKEN', 0)} | {sh.get('PASS', 0)}/{sh.get('NON-STRICT', 0)} | {failing} | "
                     f"{', '.join(c.broken) or 'none'} | {c.host} | {c.wall_s:.0f} s |")
    if meta.get("skipped"):
        lines += ["", "Not run (the release has no such connect.protocol): "
                  + ", ".join(meta["skipped"]) + "."]
    return "\n".join(lines) + "\n"


def _run_cell(target: Path, out: Path, args: argparse.Namespace, label: str) -> tuple[int, float]:
    """pytest on one cell's target, its output into out/run.log; a progress line whenever
    its share of cases done passes another 10 %."""
    from .harness.pytest_run import pytest_command
    from .harness.target import load_target
    cmd = pytest_command(load_target(target), out, args)
    started = time.monotonic()
    shown = -10
    with open(out / "run.log", "w", encoding="utf-8") as log:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(line)
            m = _PROGRESS.match(line)
            if m and int(m.group(1)) >= shown + 10:
                shown = int(m.group(1)) // 10 * 10
                print(f"   {label}: {m.group(1)}% of cases done ({time.monotonic() - started:.0f} s)", flush=True)
        code = proc.wait()
    return code, time.monotonic() - started


def run_matrix(args: argparse.Namespace) -> int:
    from fakebroker.realconnect.provision import ResolveFailed, connect_build, version_key
    from .reports.certificate import write_certificate
    from .reports.provenance import git_commit, utc_iso
    try:
        versions = [v.strip() for v in args.versions.split(",") if v.strip()]
        keys = {v: version_key(v) for v in versions}
        wanted = [p.strip() for p in args.protocols.split(",")] if args.protocols else list(PROTOCOLS)
        if unknown := [p for p in wanted if p not in PROTOCOLS]:
            raise MatrixError(f"--protocols: unknown {', '.join(unknown)} (known: {', '.join(PROTOCOLS)})")
        bugs = load_bugs(Path(args.bugs))
    except (ValueError, MatrixError) as e:
        print(f"conformance matrix: {e}", file=sys.stderr)
        return EXIT_USAGE
    started, commit = utc_iso(time.time()), git_commit()  # what the cells run, not what the table is written by
    root = Path(args.reports)
    plan = [(v, p) for v in versions for p in wanted if p in supported(keys[v])]
    done, former = _previous_cells(root) if args.reuse else ({}, {})
    skipped = [f"{v} {p}" for v in versions for p in wanted if p not in supported(keys[v])]
    cells: list[Cell] = []
    for i, (version, protocol) in enumerate(plan, 1):
        label = f"[{i}/{len(plan)}] Connect {version} {protocol}"
        if (version, protocol) in done:  # the verdict as run; its failures explained afresh
            cell = done[(version, protocol)]
            cell.failed = [{"case": f["case"], "bugs": explain(f["case"], keys[version], bugs)} for f in cell.failed]
            cells.append(cell)
            print(f"{label}: {cell.verdict} (from {root / 'matrix.json'})", flush=True)
            continue
        cell = Cell(version, protocol)
        cells.append(cell)
        try:
            build = connect_build(version)
        except ResolveFailed as e:
            cell.verdict = "BROKEN"
            cell.broken = [f"resolve: {e}"]
            print(f"{label}: BROKEN, cannot resolve: {e}", flush=True)
            continue
        cell.host = "yes" if build.hostable else "no: log4j 1 (a JVM per worker)"
        print(f"{label}: starting ({'worker host' if build.hostable else build.not_hostable_reason})", flush=True)
        out = root / f"{version}-{protocol}"
        target = cell_target(version, protocol, build.hostable, root / "targets")
        code, cell.wall_s = _run_cell(target, out, args, label)
        cell.reports = str(out)
        if not (out / "results.json").exists():
            cell.verdict = "BROKEN"
            cell.broken = [f"no results (pytest exit {code}; {out / 'run.log'})"]
        else:
            cert = write_certificate(out)
            cell.verdict, cell.counts, cell.broken = cert["verdict"], cert["counts"], list(cert["broken"])
            cell.failed = [{"case": c, "bugs": explain(c, keys[version], bugs)} for c in cert["failed"]]
        print(f"{label}: {cell.verdict} in {cell.wall_s:.0f} s"
              + "".join(f"; FAIL {f['case']}" + (f" ({', '.join(b['id'] for b in f['bugs'])})" if f["bugs"]
                                                 else " (unexplained)") for f in cell.failed)
              + "".join(f"; BROKEN {b}" for b in cell.broken), flush=True)
    meta = {"command": "conformance matrix " + " ".join(sys.argv[2:]) if sys.argv[1:2] == ["matrix"]
            else "conformance matrix --versions " + args.versions,
            "date": started, "suite_commit": commit, "skipped": skipped,
            "ran": former if done and all(c in done for c in plan) else None}
    doc = {**meta, "cells": [c.__dict__ | {"unexplained": c.unexplained} for c in cells],
           "bugs": [{"id": b.id, "title": b.title, "fixed_in": b.fixed_text, "cases": sorted(b.cases)} for b in bugs]}
    root.mkdir(parents=True, exist_ok=True)
    (root / "matrix.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    table = render_markdown(cells, meta)
    (root / "matrix.md").write_text(table, encoding="utf-8")
    if args.table:
        Path(args.table).write_text(table, encoding="utf-8")
    print(f"matrix: {root / 'matrix.md'}, {root / 'matrix.json'}" + (f", {args.table}" if args.table else ""))
    if any(c.verdict == "BROKEN" or c.broken for c in cells):
        return EXIT_BROKEN
    return EXIT_FAILED if any(c.unexplained for c in cells) else EXIT_OK


def _previous_cells(root: Path) -> tuple[dict[tuple[str, str], Cell], dict[str, Any]]:
    """The cells of the matrix.json a former run wrote into ``root``, and when and on which
    commit they ran (none: {}, {})."""
    try:
        doc = json.loads((root / "matrix.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}, {}
    fields = set(Cell.__dataclass_fields__)
    cells = {(c["version"], c["protocol"]): Cell(**{k: v for k, v in c.items() if k in fields})
             for c in doc.get("cells", []) if c.get("verdict") not in ("NOT RUN", "BROKEN")}
    ran = doc.get("ran") or {"date": doc.get("date"), "suite_commit": doc.get("suite_commit")}
    return cells, ran


def register(sub: Any) -> None:
    m = sub.add_parser("matrix", help="the worker suite on Apache Connect releases: one table of verdicts",
                       description=plain(__doc__ or ""), formatter_class=argparse.RawDescriptionHelpFormatter)
    m.add_argument("--versions", required=True, metavar="V,V,...",
                   help="Apache Kafka Connect releases, e.g. 2.4.1,3.0.0,4.2.0")
    m.add_argument("--protocols", default=None, metavar="P,P,...",
                   help="connect.protocol values (default: all three; each where the release supports it)")
    m.add_argument("--reports", default="reports/matrix", metavar="DIR",
                   help="one folder per cell, and matrix.md / matrix.json (default %(default)s)")
    m.add_argument("--table", default=None, metavar="FILE", help="also write the markdown table here")
    m.add_argument("--bugs", default=str(KNOWN_BUGS), metavar="FILE", help="known bugs (default %(default)s)")
    m.add_argument("-n", dest="workers", default="auto", help="test processes per cell (as for run)")
    m.add_argument("-k", dest="keyword", help="only cases matching (pytest -k): every cell PARTIAL")
    m.add_argument("--reuse", action="store_true",
                   help="take the cells DIR/matrix.json holds from a former run (their failures explained "
                        "again by the known bugs) and run only the others")
    m.set_defaults(func=run_matrix)
