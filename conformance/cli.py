"""``conformance``: run the suite against targets, write certificates, list the catalogue.

    conformance run --target FILE [--target FILE ...] [-n N] [--strict] [--suite S] [--reports DIR]
    conformance report [--reports DIR] [--no-html]
    conformance list [--suite S] [--target FILE]
    conformance mutants [--dir fixtures/mutants] [--reports DIR]

Exit codes of ``run`` and ``report``: 0 certified, 1 not certified, 2 broken (a case BROKEN,
a target that did not start) or a usage error (including an invalid target file).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .catalogue import default_catalogue
from .target import TargetError, load_target

EXIT_CERTIFIED, EXIT_NOT_CERTIFIED, EXIT_BROKEN = 0, 1, 2


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="conformance", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run the suite against one or more targets and certify them")
    run.add_argument("--target", action="append", required=True, metavar="FILE")
    run.add_argument("-n", dest="workers", default="auto", help="pytest-xdist workers (default auto; 0 = none)")
    run.add_argument("--strict", action="store_true", help="a SHOULD not met fails the run")
    run.add_argument("--suite", choices=("coordinator", "worker", "all"))
    run.add_argument("--reports", default="reports", metavar="DIR")
    run.add_argument("--no-html", action="store_true", help="skip the Allure HTML report")
    run.add_argument("-k", dest="keyword", help="only requirements matching (pytest -k)")

    rep = sub.add_parser("report", help="write certificate.json/.md and the Allure HTML from a run")
    rep.add_argument("--reports", default="reports", metavar="DIR")
    rep.add_argument("--no-html", action="store_true")

    lst = sub.add_parser("list", help="print the requirement catalogue with coverage")
    lst.add_argument("--suite", choices=("coordinator", "worker", "all"), default="all")
    lst.add_argument("--target", metavar="FILE", help="also show what applies to this target")

    mut = sub.add_parser("mutants", help="run the coordinator suite against every mutant: kill rate")
    mut.add_argument("--dir", default="fixtures/mutants")
    mut.add_argument("--reports", default="reports", metavar="DIR")

    from .pipeline.cli import register as register_pipeline  # ingest, audit, history (Spark)
    register_pipeline(sub)
    args = p.parse_args(argv)
    if getattr(args, "pipeline", None):
        return args.pipeline(args)
    try:
        return {"run": cmd_run, "report": cmd_report, "list": cmd_list, "mutants": cmd_mutants}[args.command](args)
    except TargetError as e:
        print(f"conformance: {e}", file=sys.stderr)
        return EXIT_BROKEN


# ---------------------------------------------------------------- run

def cmd_run(args: argparse.Namespace) -> int:
    targets = [load_target(t) for t in args.target]  # refuses invalid files before anything runs
    names = [t.name for t in targets]
    if len(set(names)) != len(names):
        print("conformance: two targets share a name; their reports would collide", file=sys.stderr)
        return EXIT_BROKEN
    root = Path(args.reports)
    codes, summary = [], []
    for target in targets:
        out = root if len(targets) == 1 else root / target.name
        print(f"== {target.name} ({target.kind}, {target.path}) -> {out}/", flush=True)
        started = time.monotonic()
        code = _run_pytest(target.path, out, args)
        wall = time.monotonic() - started
        if code == 4:  # pytest usage error
            return EXIT_BROKEN
        if not (out / "results.json").exists():
            print(f"conformance: the run of {target.name} wrote no results (pytest exit {code})", file=sys.stderr)
            codes.append(EXIT_BROKEN)
            continue
        cert_code, cert = _certify(out, html=not args.no_html)
        print(f"   wall time {wall:.1f}s", flush=True)
        codes.append(cert_code)
        summary.append({"target": target.name, "verdict": cert["verdict"], "dir": str(out),
                        "wall_s": round(wall, 1), "counts": cert["counts"]})
    if len(targets) > 1:
        _write_index(root, summary)
    return max(codes) if codes else EXIT_BROKEN


def _run_pytest(target_path: str, out: Path, args: argparse.Namespace) -> int:
    results_dir = out / "allure-results"
    if results_dir.exists():
        shutil.rmtree(results_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "pytest", "--pyargs", "conformance", "--target", target_path,
           "-p", "no:cacheprovider", "-o", "addopts=", "-v", "--tb=line", "-rfE",
           "--alluredir", str(results_dir), "--conformance-results", str(out / "results.json")]
    if args.workers not in ("0", 0):
        cmd += ["-n", str(args.workers)]
    if args.strict:
        cmd.append("--conformance-strict")
    if args.suite:
        cmd += ["--suite", args.suite]
    if getattr(args, "keyword", None):
        cmd += ["-k", args.keyword]
    return subprocess.call(cmd)


def _certify(out: Path, *, html: bool) -> tuple[int, dict[str, Any]]:
    from .certificate import render_allure, write_certificate
    cert = write_certificate(out)
    c = cert["counts"]
    print(f"   {cert['verdict']}: " + ", ".join(
        f"{lvl} " + "/".join(f"{k}={v}" for k, v in c[lvl].items() if v) for lvl in c if any(c[lvl].values())))
    for i in cert["failed"]:
        print(f"   FAIL   {i}")
    for i in cert["broken"]:
        print(f"   BROKEN {i}")
    print(f"   certificate: {out / 'certificate.md'}")
    if html:
        index, why = render_allure(out / "allure-results", out / "allure-report")
        print(f"   allure report: {index}" if index else f"   allure report not rendered: {why}")
    if cert["broken"]:
        return EXIT_BROKEN, cert
    return (EXIT_CERTIFIED if cert["certified"] else EXIT_NOT_CERTIFIED), cert


def _write_index(root: Path, summary: list[dict[str, Any]]) -> None:
    doc = {"targets": summary, "certified": all(s["verdict"] == "CERTIFIED" for s in summary)}
    (root / "certificate.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")
    lines = ["# Conformance certificates", "", "| target | verdict | wall time | report |",
             "| --- | --- | --- | --- |"]
    lines += [f"| {s['target']} | {s['verdict']} | {s['wall_s']} s | {s['dir']}/certificate.md |" for s in summary]
    (root / "certificate.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


# ---------------------------------------------------------------- report

def cmd_report(args: argparse.Namespace) -> int:
    out = Path(args.reports)
    if not (out / "results.json").exists():
        print(f"conformance: no {out / 'results.json'}: run the suite first", file=sys.stderr)
        return EXIT_BROKEN
    return _certify(out, html=not args.no_html)[0]


# ---------------------------------------------------------------- list

def cmd_list(args: argparse.Namespace) -> int:
    from .harness.cases import load_cases
    from .harness.runner import applicability
    cases = load_cases()
    target = load_target(args.target) if args.target else None
    reqs = default_catalogue().for_suite(args.suite)
    print(f"{'id':18} {'level':6} {'binds':18} {'protocols':28} coverage")
    counts = {"case": 0, "untestable": 0, "missing": 0}
    for r in reqs:
        if r.untestable:
            cov, counts["untestable"] = "untestable", counts["untestable"] + 1
        elif r.id in cases:
            cov, counts["case"] = f"case {cases[r.id].name.removeprefix('conformance.suites.')}", counts["case"] + 1
        else:
            cov, counts["missing"] = "NO CASE", counts["missing"] + 1
        if target is not None:
            a = applicability(r, target, cases.get(r.id))
            cov += "  [runs]" if a is None else f"  [{a[0].value}]"
        print(f"{r.id:18} {r.level:6} {','.join(r.binds):18} {','.join(r.protocols):28} {cov}")
    print(f"\n{len(reqs)} requirements: {counts['case']} with a case, {counts['untestable']} not "
          f"checkable from outside, {counts['missing']} without a case")
    return 0


# ---------------------------------------------------------------- mutants

def cmd_mutants(args: argparse.Namespace) -> int:
    from .suite_power import judge_mutant, mutant_files
    files = mutant_files(Path(args.dir))
    verdicts = []
    for f in files:
        v = judge_mutant(f)
        verdicts.append(v)
        state = "KILLED" if v.killed else "SURVIVED"
        print(f"{state:8} {v.name:32} by {', '.join(v.killed_by) or '-'}", flush=True)
    killed = sum(v.killed for v in verdicts)
    rate = killed / len(verdicts) if verdicts else 0.0
    print(f"\nkill rate: {killed}/{len(verdicts)} = {rate:.0%}")
    out = Path(args.reports)
    out.mkdir(parents=True, exist_ok=True)
    (out / "mutants.json").write_text(json.dumps({
        "kill_rate": rate, "killed": killed, "total": len(verdicts),
        "mutants": [{"name": v.name, "defect": v.defect, "killed_by": v.killed_by, "broken": v.broken}
                    for v in verdicts]}, indent=1), encoding="utf-8")
    return 0 if killed == len(verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
