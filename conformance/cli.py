"""``conformance``: run the suite against targets, write certificates, list the catalogue.

    conformance run --target FILE [--target FILE ...] [-n N] [--jobs J] [--strict] [--suite S]
                    [--reports DIR] [-k EXPR] [-m EXPR] [--junitxml FILE]
    conformance report [--reports DIR] [--no-html]
    conformance list [ID ...] [--suite S] [--target FILE] [--json]
    conformance mutants [--suite S] [--group-log] [--reports DIR]
    conformance verify-attestation FILE --key PUB.pem
    conformance matrix --versions V,V,... [--protocols P,...] [--reports DIR] [--table FILE] [-k EXPR]

``run`` and ``report`` write an in-toto attestation beside each certificate
(attestation.intoto.json), signed in a DSSE envelope (attestation.intoto.dsse.json) with
``--signing-key`` (an Ed25519 PEM private key); ``verify-attestation`` exits 0 when the
envelope is signed by the key and its statement is sound, 1 with the reason otherwise.

Exit codes (``fakebroker.exit_codes``, shared by every command): 0 certified, 1 not
certified (a FAIL), 2 usage error (including an invalid target file), 3 BROKEN (a case that
could not run, a target that did not start, a run without results), 4 PARTIAL (nothing
failed, but the run left part of the target's scope out). With several targets, the
highest code of any target.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from fakebroker.cli_text import add_version, plain
from fakebroker.exit_codes import EXIT_BROKEN, EXIT_FAILED, EXIT_OK, EXIT_PARTIAL, EXIT_USAGE

from .reports.attestation import AttestationError, Ed25519PrivateKey, load_private_key, verify_file, write_attestation
from .catalogue.requirements import LEVELS, Catalogue, Requirement, default_catalogue
from .reports.certificate import CertificateError, check_same_run
from .harness.command import CommandError, preflight
from .harness.pytest_run import pytest_command
from .reports.provenance import ArtefactMissing, require_artefact
from .harness.target import Target, TargetError, load_target
from .chaos.regression import check_scenarios

# Worst first: with several targets the run exits with the worst code of any.
SEVERITY = (EXIT_USAGE, EXIT_BROKEN, EXIT_FAILED, EXIT_PARTIAL, EXIT_OK)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="conformance", description=plain(__doc__.split("\n\n")[0]),
                                epilog="exit codes: 0 certified, 1 not certified, 2 usage error, "
                                       "3 broken, 4 partial (see docs/running.md, Exit codes)")
    add_version(p, "conformance")
    sub = p.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run the suite against one or more targets and certify them")
    run.add_argument("--target", action="append", required=True, metavar="FILE",
                     help="target file (TOML) of an implementation under test, or mutant:NAME (a mutant declared "
                          "in fixtures/mutants/*.toml); repeat for several")
    run.add_argument("-n", dest="workers", default="auto",
                     help="test processes (pytest-xdist; 0 = none). Default auto: one per core for a "
                          "virtual-clock target, two per core for a real-clock one, whose cases mostly "
                          "wait on real time (real workers and brokers)")
    run.add_argument("--jobs", type=int, default=1, metavar="J",
                     help="run up to J targets at once (default 1); each case's outcome is printed as it "
                          "comes, [target] ID OUTCOME, each target's summary when it finishes and its whole "
                          "pytest output goes to its folder's pytest.log. Targets that mostly wait on real time (real workers and "
                          "brokers) finish sooner; their cases then share the CPU (make certify runs the "
                          "bundled targets 3 at a time)")
    run.add_argument("--strict", action="store_true", help="a SHOULD not met fails the run")
    run.add_argument("--suite", choices=("coordinator", "worker", "all"),
                     help="requirements to run (default: the target's kind; narrower makes the run PARTIAL)")
    run.add_argument("--reports", default="reports", metavar="DIR",
                     help="where results, certificates and Allure go (default %(default)s; one folder per target)")
    run.add_argument("--no-html", action="store_true", help="skip the Allure HTML report")
    run.add_argument("-k", dest="keyword", help="only cases matching (pytest -k); the verdict is then PARTIAL")
    run.add_argument("-m", dest="markexpr",
                     help='only cases with these markers (pytest -m, e.g. "MUST and sessioned"); PARTIAL')
    run.add_argument("--junitxml", metavar="FILE",
                     help="also write the outcomes as JUnit XML (one target: FILE; several: "
                          "FILE's name under each target's folder)")
    run.add_argument("--signing-key", metavar="FILE", type=Path,
                     help="Ed25519 PEM private key: also sign each attestation (DSSE envelope)")
    run.add_argument("--no-artefact-digest", action="store_true",
                     help="certify a target with nothing local to digest as its tested artefact (e.g. a "
                          "coordinator at a bootstrap address); the certificate states it. Without it such a "
                          "run is refused before any case runs")

    rep = sub.add_parser("report", help="write certificate.json/.md and the Allure HTML from a run")
    rep.add_argument("--reports", default="reports", metavar="DIR",
                     help="a run's folder, or a several-target run's (default %(default)s)")
    rep.add_argument("--no-html", action="store_true", help="skip the Allure HTML report")
    rep.add_argument("--signing-key", metavar="FILE", type=Path,
                     help="Ed25519 PEM private key: also sign each attestation (DSSE envelope)")

    lst = sub.add_parser("list", help="print the requirement catalogue with coverage")
    lst.add_argument("ids", nargs="*", metavar="ID",
                     help="only these requirements, each with its statement, level and source (document, "
                          "section, link); a retired id of schemas/id-renames.json names its successor")
    lst.add_argument("--suite", choices=("coordinator", "worker", "all"), default="all",
                     help="which requirements (default %(default)s)")
    lst.add_argument("--target", metavar="FILE", help="also show what applies to this target")
    lst.add_argument("--json", action="store_true", help="print the list as JSON (with the case ids per target)")
    lst.add_argument("--by-source", action="store_true",
                     help="print how many of the requirements each source document states, per level")

    mut = sub.add_parser("mutants", help="run the suites against every mutant: kill rate per suite")
    mut.add_argument("--suite", choices=("coordinator", "worker", "all"), default="all",
                     help="which suite's mutants: coordinator mutants are judged by the coordinator suite, "
                          "worker mutants by the worker suite (default %(default)s)")
    mut.add_argument("--reports", default="reports", metavar="DIR",
                     help="where mutants.json (the kill rate and every mutant's verdict) goes "
                          "(default %(default)s)")
    mut.add_argument("--group-log", action="store_true",
                     help="also the group-log mutants (base fakebroker-group-log), judged by the coordinator suite on a "
                          "real Kafka the harness starts for each (about a minute each; off by default)")

    ver = sub.add_parser("verify-attestation", help="check a signed attestation: exit 0 valid, 1 invalid",
                         description="Verify a DSSE envelope (attestation.intoto.dsse.json) against a public key, "
                                     "then its in-toto statement: the schema, the certificate in it, the subject "
                                     "digest. Exit 0 valid; 1 invalid, with a one-line reason.")
    ver.add_argument("file", type=Path, help="the envelope (attestation.intoto.dsse.json)")
    ver.add_argument("--key", required=True, type=Path, metavar="PUB.pem", help="the Ed25519 PEM public key")

    from .matrix import register as register_matrix
    register_matrix(sub)
    from .pipeline.cli import register as register_pipeline  # ingest, audit, history (Spark)
    register_pipeline(sub)
    from .chaos.cli import register as register_chaos
    register_chaos(sub)
    from .suites.coordinator.golden.cli import register as register_golden
    register_golden(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    from .matrix import run_matrix
    args = build_parser().parse_args(argv)
    if getattr(args, "pipeline", None):
        return args.pipeline(args)
    if args.command in ("chaos", "golden"):
        return args.func(args)
    commands = {"run": cmd_run, "report": cmd_report, "list": cmd_list, "mutants": cmd_mutants,
                "verify-attestation": cmd_verify_attestation, "matrix": run_matrix}
    try:
        return commands[args.command](args)
    except (TargetError, AttestationError, CertificateError, CommandError, ArtefactMissing) as e:
        print(f"conformance: {e}", file=sys.stderr)
        return EXIT_USAGE


# ---------------------------------------------------------------- run

def cmd_run(args: argparse.Namespace) -> int:
    targets = [load_target(t) for t in args.target]  # refuses invalid files before anything runs
    for target in targets:  # ... and a command, script, scenario or artefact that is not there
        check_scenarios(target)
        preflight(target)
        require_artefact(target, args.no_artefact_digest)
    key = _signing_key(args)
    names = [t.name for t in targets]
    if len(set(names)) != len(names):
        print("conformance: two targets share a name; their reports would collide", file=sys.stderr)
        return EXIT_USAGE
    if args.jobs < 1:
        print("conformance: --jobs must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    if not (args.workers == "auto" or (args.workers.isdigit())):
        print(f"conformance: -n {args.workers}: expected a number of test processes or auto", file=sys.stderr)
        return EXIT_USAGE
    root = Path(args.reports)
    outs = [root if len(targets) == 1 else root / target.name for target in targets]
    codes, summary = [], []
    for target, out, (code, wall) in zip(targets, outs, _run_all(targets, outs, args)):
        if not (out / "results.json").exists():
            if code == pytest_usage_error():
                return EXIT_USAGE
            print(f"conformance: the run of {target.name} wrote no results (pytest exit {code})", file=sys.stderr)
            codes.append(EXIT_BROKEN)
            continue
        cert_code, cert = _certify(out, html=not args.no_html, key=key)
        if args.junitxml:
            from .reports.junit import write_junit
            junit = Path(args.junitxml) if len(targets) == 1 else out / Path(args.junitxml).name
            write_junit(cert, junit)
            print(f"   junit: {junit}")
        print(f"   wall time {wall:.1f}s", flush=True)
        codes.append(cert_code)
        summary.append(_summary_entry(out, cert, wall))
    if len(targets) > 1:
        _write_index(root, summary)
        print(f"== summary of {len(targets)} targets: {root / 'certificate.md'} (and .json)", flush=True)
    return worst(codes)


def pytest_usage_error() -> int:
    """pytest's exit code for a usage error (a target refused by the plugin): with no
    results.json written, the plugin's own verdict codes cannot be meant."""
    import pytest
    return int(pytest.ExitCode.USAGE_ERROR)


def worst(codes: list[int]) -> int:
    """The most severe of several exit codes (none: BROKEN, nothing ran)."""
    return min(codes, key=SEVERITY.index) if codes else EXIT_BROKEN


# Progress is plain lines, not rich's live display: CI logs and pipes (where certification
# mostly runs) are not terminals, a live display there prints nothing until the end or
# redraws as noise, and a line per case is what a reader (and the test) can grep.
# A case's line in pytest -v output, in either order (plain: "...[ID] PASS"; under xdist:
# "[gw0] [ 10%] PASS ...[ID]"): the outcome words are the plugin's (pytest_report_teststatus).
OUTCOME_WORDS = r"(PASS|FAIL|BROKEN|NON-STRICT \(strict\)|NON-STRICT|NOT-APPLICABLE)"
CASE_LINE = (re.compile(r"test_(?:requirement|scenario)\[(?P<id>.+)\] " + OUTCOME_WORDS.replace("(", "(?P<word>", 1)
                        + r"(?=\s|$)"),
             re.compile(OUTCOME_WORDS.replace("(", "(?P<word>", 1) + r" \S*test_(?:requirement|scenario)\[(?P<id>.+)\]\s*$"))
PYTEST_LOG = "pytest.log"


def _run_all(targets: list[Target], outs: list[Path], args: argparse.Namespace) -> Iterator[tuple[int, float]]:
    """(pytest's exit code, wall seconds) per target, in order, each after its ``==`` line
    and output. One at a time, pytest writes straight to the terminal; with ``--jobs``
    several run at once: each case's outcome is printed as it comes (``[target] ID PASS``),
    then, in the targets' order, each one's summary; the whole output is in its pytest.log."""
    def header(target: Target, out: Path) -> None:
        print(f"== {target.name} ({target.kind}, {target.path}) -> {out}/", flush=True)
    if args.jobs == 1 or len(targets) == 1:
        for target, out in zip(targets, outs):
            header(target, out)
            started = time.monotonic()
            code = _run_pytest(target, out, args)
            yield code, time.monotonic() - started
        return
    import threading
    from concurrent.futures import ThreadPoolExecutor
    lock = threading.Lock()

    def run(target: Target, out: Path) -> tuple[int, float, list[str]]:
        started = time.monotonic()
        with lock:
            print(f"== started {target.name} -> {out}/", flush=True)
        lines: list[str] = []

        def progress(line: str) -> None:
            lines.append(line)
            m = CASE_LINE[0].search(line) or CASE_LINE[1].search(line)
            if m:
                with lock:
                    print(f"   [{target.name}] {m.group('id')} {m.group('word')}", flush=True)
        code = _run_pytest(target, out, args, progress)
        return code, time.monotonic() - started, lines
    with ThreadPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(run, t, o) for t, o in zip(targets, outs)]
        for target, out, f in zip(targets, outs, futures):
            code, wall, lines = f.result()
            with lock:
                header(target, out)
                print("".join(_summary_lines(lines)), end="")
                print(f"   pytest output: {out / PYTEST_LOG}", flush=True)
            yield code, wall


def _summary_lines(lines: list[str]) -> list[str]:
    """pytest's closing part: from its short test summary (or its last line) on."""
    for i, line in enumerate(lines):
        if "short test summary info" in line:
            return lines[i:]
    return lines[-1:]


def _run_pytest(target: Target, out: Path, args: argparse.Namespace,
                progress: Callable[[str], None] | None = None) -> int:
    """pytest on ``target``: its exit code. Its output goes to the terminal, or, with
    ``progress``, line by line to it and to ``out/pytest.log``."""
    cmd = pytest_command(target, out, args)
    if progress is None:
        return subprocess.call(cmd)
    with open(out / PYTEST_LOG, "w", encoding="utf-8") as log, \
            subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(line)
            progress(line)
    return proc.returncode


def _signing_key(args: argparse.Namespace) -> Ed25519PrivateKey | None:
    """The private key of --signing-key, read before the run so that a bad key costs nothing
    (AttestationError: a usage error)."""
    return load_private_key(args.signing_key) if args.signing_key is not None else None


def _certify(out: Path, *, html: bool, key: Ed25519PrivateKey | None = None) -> tuple[int, dict[str, Any]]:
    from .reports.allure_support import verdict_line
    from .reports.certificate import exit_code, render_allure, write_certificate
    if html:  # first, so that the certificate links the report
        index, why = render_allure(out / "allure-results", out / "allure-report")
        print(f"   allure report: {index}" if index else f"   allure report not rendered: {why}")
    cert = write_certificate(out)
    print(f"   {verdict_line(cert)}")
    for why in cert["refused"]:
        print(f"   REFUSED {why}")
    for i in cert["failed"]:
        print(f"   FAIL   {i}")
    for i in cert["broken"]:
        print(f"   BROKEN {i}")
    if cert["left_out"]:
        shown = ", ".join(x["id"] for x in cert["left_out"][:8])
        more = f" and {len(cert['left_out']) - 8} more" if len(cert["left_out"]) > 8 else ""
        print(f"   LEFT OUT {len(cert['left_out'])}: {shown}{more} ({cert['left_out'][0]['reason']})")
    print(f"   certificate: {out / 'certificate.md'}")
    try:
        print("   attestation: " + ", ".join(str(f) for f in write_attestation(out, cert, key)))
    except AttestationError as e:
        print(f"   no attestation: {e}")
    return exit_code(cert), cert


def _summary_entry(out: Path, cert: dict[str, Any], wall_s: float) -> dict[str, Any]:
    return {"target": cert["target"]["name"], "verdict": cert["verdict"], "run_id": cert["run_id"], "dir": str(out),
            "wall_s": round(wall_s, 1), "counts": cert["counts"], "goldens": cert["goldens"],
            "left_out": len(cert["left_out"]), "finished": cert["provenance"].get("finished"),
            "implementation": cert["target"]["implementation_text"], "allure_report": cert.get("allure_report")}


def _write_index(root: Path, summary: list[dict[str, Any]]) -> None:
    """reports/certificate.md and .json: every target's verdict, counts and links."""
    from .reports.provenance import git_commit, utc_iso
    doc = {"date": utc_iso(time.time()), "suite_commit": git_commit(), "targets": summary,
           "certified": all(s["verdict"] == "CERTIFIED" for s in summary)}
    (root / "certificate.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")
    lines = ["# Conformance certificates", "", f"Date (UTC): {doc['date']}"
             + (f"; suite commit `{doc['suite_commit']}`" if doc["suite_commit"] else ""), "",
             "| target | implementation | verdict | MUST pass/fail/broken | SHOULD pass/non-strict "
             "| goldens replayed | left out | wall time | certificate | Allure report |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for s in summary:
        rel = Path(s["dir"]).relative_to(root) if Path(s["dir"]).is_relative_to(root) else Path(s["dir"])
        m, sh = s["counts"]["MUST"], s["counts"]["SHOULD"]
        allure = f"[report]({rel}/{s['allure_report']})" if s.get("allure_report") else "not rendered"
        lines.append(f"| {s['target']} | {s['implementation']} | {s['verdict']} | {m['PASS']}/{m['FAIL']}/"
                     f"{m['BROKEN']} | {sh['PASS']}/{sh['NON-STRICT']} | {s['goldens']['replayed']} | "
                     f"{s['left_out']} | {s['wall_s']} s | [certificate]({rel}/certificate.md) | {allure} |")
    (root / "certificate.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


# ---------------------------------------------------------------- report

def cmd_report(args: argparse.Namespace) -> int:
    """One run's folder, or the folder of a several-target run (one sub-folder per target,
    as ``make certify`` writes): every certificate and the summary again."""
    out = Path(args.reports)
    key = _signing_key(args)
    if (out / "results.json").exists():
        check_same_run(out)
        return _certify(out, html=not args.no_html, key=key)[0]
    runs = sorted(d for d in out.glob("*") if (d / "results.json").is_file())
    for d in runs:
        check_same_run(d)
    if not runs:
        print(f"conformance: no {out / 'results.json'} nor */results.json: run the suite first", file=sys.stderr)
        return EXIT_USAGE
    codes, summary = [], []
    for d in runs:
        print(f"== {d.name} -> {d}/", flush=True)
        code, cert = _certify(d, html=not args.no_html, key=key)
        codes.append(code)
        summary.append(_summary_entry(d, cert, cert["provenance"].get("duration_s", 0.0)))
    _write_index(out, summary)
    return worst(codes)


# ---------------------------------------------------------------- verify-attestation

def cmd_verify_attestation(args: argparse.Namespace) -> int:
    try:
        stmt = verify_file(args.file, args.key)
    except AttestationError as e:
        print(f"INVALID {args.file}: {e}")
        return EXIT_FAILED
    cert, subject = stmt["predicate"], stmt["subject"][0]
    print(f"VALID {args.file}: {subject['name']} sha256:{subject['digest']['sha256']} "
          f"{cert['verdict']} ({cert['provenance'].get('finished', 'undated')})")
    return EXIT_OK


# ---------------------------------------------------------------- list

def cmd_list(args: argparse.Namespace) -> int:
    from . import suites
    from .harness.cases import load_cases
    from .harness.runner import applicability
    from .invariants.report import is_invariant
    from .harness.scope import case_id, protocols_to_run
    cases = load_cases(suites)
    target = load_target(args.target) if args.target else None
    cat = default_catalogue()
    reqs = cat.for_suite(args.suite)
    if args.ids:
        wanted = [cat.resolve(i) for i in args.ids]
        unknown = [i for i, w in zip(args.ids, wanted) if w not in cat]
        if unknown:
            print(f"conformance: no requirement {', '.join(unknown)} in the catalogue", file=sys.stderr)
            return EXIT_USAGE
        reqs = [r for r in reqs if r.id in wanted]
    if args.by_source:
        _print_by_source(reqs, cat)
        return 0
    rows = []
    for r in reqs:
        live = cases[r.id].name.removeprefix("conformance.suites.") if r.id in cases else (
            "every worker case's exchanges (invariant)" if is_invariant(r.id) else None)
        row: dict[str, Any] = {"id": r.id, "level": r.level, "binds": list(r.binds), "protocols": list(r.protocols),
                               "coverage": "untestable" if r.untestable else "case" if live or r.transcripts else "missing",
                               "case": live, "transcripts": list(r.transcripts), "aliases": cat.aliases(r.id),
                               "statement": r.statement, "source": r.source.short, "source_title": r.source.doc.title,
                               "source_url": r.source.link}
        if target is not None:
            a = None if is_invariant(r.id) and target.kind in r.binds and target.claims(r.protocols) \
                else applicability(r, target, cases.get(r.id))
            row["on_target"] = "runs" if a is None else a[0].value
            row["cases"] = [case_id(r.id, p) for p in protocols_to_run(r, target)]
        rows.append(row)
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(f"{'id':18} {'level':6} {'binds':18} {'protocols':28} coverage")
    for row in rows:
        cov = {"untestable": "untestable", "missing": "NO CASE"}.get(row["coverage"], " + ".join(
            ([f"case {row['case']}"] if row["case"] else [])
            + ([f"{len(row['transcripts'])} transcript(s)"] if row["transcripts"] else [])))
        if target is not None:
            cov += f"  [{row['on_target']}]" + (f" as {', '.join(row['cases'])}" if len(row["cases"]) > 1 else "")
        aka = f"  (was {', '.join(row['aliases'])})" if row["aliases"] else ""
        print(f"{row['id']:18} {row['level']:6} {','.join(row['binds']):18} {','.join(row['protocols']):28} {cov}{aka}")
        if args.ids:  # named requirements: what each says and where it is stated
            print(f"    {row['level']}: {row['statement']}\n    source: {row['source']} "
                  f"({row['source_title']})\n    {row['source_url']}")
    n = {c: sum(row["coverage"] == c for row in rows) for c in ("case", "untestable", "missing")}
    print(f"\n{len(reqs)} requirements: {n['case']} with a case, {n['untestable']} not "
          f"checkable from outside, {n['missing']} without a case")
    return 0


def _print_by_source(reqs: list[Requirement], cat: Catalogue) -> None:
    """One row per cited document: how many of ``reqs`` it states at each level."""
    n = Counter((r.source.doc.id, r.level) for r in reqs)
    print(f"{'source':16} " + " ".join(f"{lv:>6}" for lv in LEVELS))
    for doc in cat.cited():
        if any(n[doc.id, lv] for lv in LEVELS):
            print(f"{doc.id:16} " + " ".join(f"{n[doc.id, lv]:>6}" for lv in LEVELS))
    print(f"{f'all {len(reqs)}':16} " + " ".join(f"{sum(r.level == lv for r in reqs):>6}" for lv in LEVELS))


# ---------------------------------------------------------------- mutants

def cmd_mutants(args: argparse.Namespace) -> int:
    from .harness.mutant_declarations import mutants_of
    from .tools.suite_power import judge_mutant
    from .tools.worker_power import judge_worker_mutant
    coordinators = mutants_of("coordinator")
    # suite -> (the suite the mutants are judged by, judge, the declared mutants)
    judges = {"coordinator": ("coordinator", judge_mutant, [m for m in coordinators if not m.group_log]),
              "worker": ("worker", judge_worker_mutant, mutants_of("worker"))}
    if args.group_log:
        judges["group-log"] = ("coordinator", judge_mutant, [m for m in coordinators if m.group_log])
    report, ok = {}, True
    for suite, (judged_by, judge, mutants) in judges.items():
        if args.suite not in (judged_by, "all"):
            continue
        print(f"== {suite} suite: {len(mutants)} mutants", flush=True)
        verdicts = []
        for m in mutants:
            v = judge(m)
            verdicts.append(v)
            state = "KILLED" if v.killed else "SURVIVED"
            why = f"by {', '.join(v.killed_by)}" if v.killed else (f"(reason: {v.survives})" if v.survives
                                                                     else "(NO REASON GIVEN)")
            print(f"{state:8} {v.name:34} {why}", flush=True)
            ok &= v.killed or bool(v.survives)
        killed = sum(v.killed for v in verdicts)
        rate = killed / len(verdicts) if verdicts else 0.0
        print(f"{suite} kill rate: {killed}/{len(verdicts)} = {rate:.0%}\n", flush=True)
        report[suite] = {"kill_rate": rate, "killed": killed, "total": len(verdicts), "mutants": [
            {"name": v.name, "defect": v.defect, "killed_by": v.killed_by, "broken": v.broken,
             "survives": v.survives} for v in verdicts]}
    out = Path(args.reports)
    out.mkdir(parents=True, exist_ok=True)
    (out / "mutants.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
