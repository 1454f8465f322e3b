"""The certificate: per-case outcomes, counts per level, what was left out, provenance and
the verdict.

Verdict (``VERDICTS``): **CERTIFIED** when the run covered the target's whole scope
(``conformance.scope``: every requirement of its kind, per claimed Connect sub-protocol),
no requirement FAILed (under strict mode a NON-STRICT counts too) and nothing is BROKEN;
**NOT CERTIFIED** when something FAILed or is BROKEN; **PARTIAL** when nothing failed but
part of the scope has no result (narrowed with -k / -m, a narrower suite, goldens not
found, a run that stopped early). Every row is a catalogue requirement's (an unknown id is
a ``CertificateError``), one per requirement (per sub-protocol on a worker), with its cases
listed (``cases``: its live case and its golden transcripts, each with its outcome); the
golden transcripts are summed up again under ``goldens``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from fakebroker.exit_codes import EXIT_BROKEN, EXIT_FAILED, EXIT_OK, EXIT_PARTIAL

from .catalogue import LEVELS, Catalogue, default_catalogue
from .provenance import implementation_text
from .scope import SUB_PROTOCOLS

OUTCOMES = ("PASS", "NON-STRICT", "NOT-APPLICABLE", "FAIL", "BROKEN")
CERTIFIED, NOT_CERTIFIED, PARTIAL = "CERTIFIED", "NOT CERTIFIED", "PARTIAL"
VERDICTS = (CERTIFIED, NOT_CERTIFIED, PARTIAL)
ALLURE_REPORT = "allure-report/index.html"  # relative to the run's reports folder


class CertificateError(ValueError):
    """results.json names a case the catalogue does not know."""


def _counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    c = Counter(r["outcome"] for r in rows)
    return {o: c.get(o, 0) for o in OUTCOMES}


def build_certificate(run: dict[str, Any], catalogue: Catalogue | None = None) -> dict[str, Any]:
    cat = catalogue or default_catalogue()
    rows = []
    for res in sorted(run["results"], key=lambda r: r["id"]):
        base = res.get("requirement") or res["id"]
        if base not in cat:
            raise CertificateError(f"results: case {res['id']!r}: requirement {base!r} is not in the "
                                   "catalogue (rule: every case is a catalogue requirement's)")
        req = cat[base]
        rows.append({"id": res["id"], "requirement": base, "protocol": res.get("protocol"),
                     "level": req.level, "outcome": res["outcome"], "message": res.get("message", ""),
                     "feature": req.feature, "protocols": list(req.protocols),
                     "source": f"{req.source.file} § {req.source.section}", "statement": req.statement,
                     "transcripts": list(req.transcripts), "cases": _cases(res, req.transcripts),
                     "notes": [n for n in res.get("notes") or [] if n.strip()],
                     "duration_s": res.get("duration_s", 0.0)})
    counts = {level: _counts([r for r in rows if r["level"] == level]) for level in LEVELS}
    replays = [c for r in rows for c in r["cases"] if c["case"] in r["transcripts"]]
    golden_counts = _counts(replays)
    strict = bool(run.get("strict"))
    failed = [r["id"] for r in rows if r["outcome"] == "FAIL" or (strict and r["outcome"] == "NON-STRICT")]
    broken = [r["id"] for r in rows if r["outcome"] == "BROKEN"]
    left = run.get("left_out")
    if left is None:  # a results.json without the record of its scope proves no coverage
        left = [{"id": "(scope)", "reason": "results.json does not record what the run covered"}]
    verdict = NOT_CERTIFIED if failed or broken else PARTIAL if left else CERTIFIED
    target = dict(run["target"])
    target["implementation_text"] = implementation_text(target.get("implementation", ""), target.get("version", ""))
    return {
        "format": "connect-conformance certificate 1",
        "target": target, "suite": run["suite"], "strict": strict,
        "verdict": verdict, "certified": verdict == CERTIFIED,
        "failed": failed, "broken": broken, "left_out": left,
        "counts": counts,
        "goldens": {"requirements": sum(1 for r in rows if r["transcripts"]), "recorded": len(replays),
                    "replayed": len(replays) - golden_counts["NOT-APPLICABLE"], "counts": golden_counts},
        "per_protocol": _per_protocol(rows, target),
        "provenance": run.get("provenance", {}), "versions": run.get("versions", {}),
        **({"api_versions": run["api_versions"]} if run.get("api_versions") else {}),
        "allure_report": run.get("allure_report"),
        "requirements": rows,
    }


def _cases(res: dict[str, Any], transcripts: tuple[str, ...]) -> list[dict[str, str]]:
    """The requirement's cases with their outcomes, as the run listed them; a result without
    that list (an older results.json, a requirement that did not run) gives each transcript
    the requirement's outcome."""
    if "cases" in res:
        return list(res["cases"])
    return [{"case": t, "outcome": res["outcome"], "detail": ""} for t in transcripts]


def _per_protocol(rows: list[dict[str, Any]], target: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """For each protocol the target claims, the outcome of every case run for it: a
    per-protocol run's rows at that protocol; otherwise the rows of requirements naming it."""
    out = {}
    for p in target.get("protocols", []):
        mine = [r for r in rows if r["protocol"] == p or (r["protocol"] is None and p in r["protocols"])]
        out[p] = {"counts": _counts(mine), "cases": {r["requirement"]: r["outcome"] for r in mine}}
    return out


def exit_code(cert: dict[str, Any]) -> int:
    """The documented exit code (fakebroker.exit_codes) of a certificate's verdict."""
    if cert["broken"]:
        return EXIT_BROKEN
    return {CERTIFIED: EXIT_OK, NOT_CERTIFIED: EXIT_FAILED, PARTIAL: EXIT_PARTIAL}[cert["verdict"]]


# ---------------------------------------------------------------- markdown

def render_markdown(cert: dict[str, Any]) -> str:
    t, prov = cert["target"], cert["provenance"]
    out = [f"# Conformance certificate: {t['name']}", "",
           f"**Verdict: {cert['verdict']}**" + (" (strict)" if cert["strict"] else ""), "",
           "| | |", "| --- | --- |",
           f"| date (UTC) | {prov.get('finished', 'unknown')} (started {prov.get('started', 'unknown')}) |",
           f"| target file | `{t['path']}` |", f"| kind | {t['kind']} |",
           f"| implementation | {t['implementation_text']} |",
           f"| protocols claimed | {', '.join(t['protocols'])} |"]
    if t["kind"] == "worker":
        out.append(f"| connect.protocol (non-per-protocol cases) | {t.get('connect_protocol', '')} |")
    out.append(f"| suite | {cert['suite']} |")
    if t.get("mutant"):
        out.append(f"| mutant | {t['mutant']} |")
    out += _provenance_rows(prov)
    if cert.get("allure_report"):
        out.append(f"| Allure report | [{cert['allure_report']}]({cert['allure_report']}) |")
    for k, v in sorted(cert["versions"].items()):
        if k not in ("executable", "ci"):
            out.append(f"| {k} | {v} |")
    if cert.get("api_versions"):
        out.append("| API versions negotiated | " + ", ".join(
            f"{api} {r[0]}-{r[1]}" if r else f"{api} none"
            for api, r in cert["api_versions"].items()) + " |")
    out += ["", "## Counts", "", "Requirements of the catalogue (one row per case: a requirement run "
            "at several Connect sub-protocols counts once per protocol):", "",
            "| level | " + " | ".join(OUTCOMES) + " |", "| --- |" + " --- |" * len(OUTCOMES)]
    for level, c in cert["counts"].items():
        out.append(f"| {level} | " + " | ".join(str(c[o]) for o in OUTCOMES) + " |")
    g = cert["goldens"]
    out += ["", f"Golden transcripts (cases of {g['requirements']} of the requirements above): "
            f"{g['recorded']} recorded, {g['replayed']} replayed ("
            + ", ".join(f"{k} {v}" for k, v in g["counts"].items() if v) + ")."
            if g["recorded"] else "Golden transcripts: none in this run."]
    if cert["failed"] or cert["broken"]:
        out += ["", "## Why not certified", ""]
        out += [f"- FAIL {i}" for i in cert["failed"]] + [f"- BROKEN {i}" for i in cert["broken"]]
    if cert["left_out"]:
        out += ["", f"## Left out ({len(cert['left_out'])}): this run certifies nothing", "",
                "| case | why |", "| --- | --- |"]
        out += [f"| {x['id']} | {_cell(x['reason'])} |" for x in cert["left_out"]]
    out += _per_protocol_section(cert)
    out += ["", "## Requirements", "", "One row per requirement; it passes only if each of its cases "
            "(its live case, its golden transcripts) passes.", "",
            "| case | level | outcome | requirement | detail | cases |",
            "| --- | --- | --- | --- | --- | --- |"]
    for r in cert["requirements"]:
        detail = r["message"].splitlines()[0] if r["message"] else ""
        out.append(f"| {r['id']} | {r['level']} | {r['outcome']} | {_cell(r['statement'])} | {_cell(detail)} "
                   f"| {_cell(cases_text(r['cases']))} |")
    return "\n".join(out + _notes_section(cert)) + "\n"


def _notes_section(cert: dict[str, Any]) -> list[str]:
    """What the cases noted without failing: a golden's unpinned fields that differ from the
    recording, a case's remark on how it ran. Informational, never part of the verdict."""
    noted = [(r["id"], n.splitlines()[0]) for r in cert["requirements"] for n in r.get("notes") or []]
    if not noted:
        return []
    return ["", f"## Notes ({len(noted)}): informational, not part of the verdict", "",
            "| case | note |", "| --- | --- |"] + [f"| {i} | {_cell(n)} |" for i, n in noted]


def _provenance_rows(prov: dict[str, Any]) -> list[str]:
    if not prov:
        return ["| provenance | not recorded |"]
    suite, cat, art = prov["suite"], prov["catalogue"], prov["artefact"]
    rows = [f"| suite version | {suite['name']} {suite['version']}"
            + (f", commit `{suite['commit']}`" if suite.get("commit") else "") + " |",
            f"| catalogue | {cat['file']}: {cat['requirements']} requirements, sha256 `{cat['sha256']}` |",
            f"| tested artefact | {art['files']} file(s), {art['chosen']}; sha256 `{art['sha256']}` |"]
    if prov.get("java"):
        rows.append(f"| Java | {prov['java']} |")
    ci = prov.get("ci")
    rows.append(f"| CI run | {ci['url'] or ci['system'] if ci else 'none (a local run)'} |")
    for d in prov["spec_documents"]:
        digest = f" (sha256 `{d['sha256'][:16]}…`)" if d.get("sha256") else " (not at hand)"
        rows.append(f"| spec document | {_cell(d['title'])} — `{d['file']}`{digest} |")
    return rows


def _per_protocol_section(cert: dict[str, Any]) -> list[str]:
    """Counts per claimed protocol, then the outcome of every case under each claimed
    protocol (Connect's sub-protocols first: a worker runs their requirements once each)."""
    per = cert["per_protocol"]
    if not per:
        return []
    out = ["", "## Per protocol claimed", "",
           "| protocol | " + " | ".join(OUTCOMES) + " |", "| --- |" + " --- |" * len(OUTCOMES)]
    for p, v in per.items():
        out.append(f"| {p} | " + " | ".join(str(v["counts"][o]) for o in OUTCOMES) + " |")
    columns = [p for p in SUB_PROTOCOLS if p in per] + [p for p in per if p not in SUB_PROTOCOLS]
    reqs = sorted({rid for v in per.values() for rid in v["cases"]})
    if not reqs:
        return out
    out += ["", "The outcome of every case under each protocol claimed (`-`: the requirement does not "
            "name that protocol). A requirement bound to Connect's sub-protocols ran once per claimed "
            "sub-protocol it names, the worker started at that `connect.protocol`:", "",
            "| requirement | " + " | ".join(columns) + " |", "| --- |" + " --- |" * len(columns)]
    for rid in reqs:
        out.append(f"| {rid} | " + " | ".join(per[p]["cases"].get(rid, "-") for p in columns) + " |")
    return out


def cases_text(cases: list[dict[str, str]]) -> str:
    """A row's cases in one line: ``live PASS, CLS-JOIN-03.jsonl PASS``."""
    return ", ".join(f"{c['case']} {c['outcome']}" for c in cases)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def write_certificate(reports: Path, catalogue: Catalogue | None = None) -> dict[str, Any]:
    run = json.loads((reports / "results.json").read_text(encoding="utf-8"))
    if (reports / ALLURE_REPORT).is_file():
        run["allure_report"] = ALLURE_REPORT
    cert = build_certificate(run, catalogue)
    (reports / "certificate.json").write_text(json.dumps(cert, indent=1), encoding="utf-8")
    (reports / "certificate.md").write_text(render_markdown(cert), encoding="utf-8")
    return cert


# ---------------------------------------------------------------- the Allure HTML report

def allure_binary() -> str | None:
    """$ALLURE, the project's npm install (.venv/node), or allure on the PATH."""
    env = os.environ.get("ALLURE")
    if env:
        return env
    here = Path(__file__).resolve().parent.parent / ".venv" / "node" / "node_modules" / ".bin" / "allure"
    if here.exists():
        return str(here)
    return shutil.which("allure")


def render_allure(results_dir: Path, out_dir: Path) -> tuple[Path | None, str]:
    """One self-contained HTML file (allure generate --single-file); (None, why) if impossible.

    Keeps Allure's history between runs into the same folder (``out_dir/history``, fed back
    into the results before generating; the executor's buildOrder continues it), and copies
    the spec documents and golden transcripts beside the report so its links work wherever
    the folder is opened."""
    binary = allure_binary()
    if binary is None:
        return None, "allure-commandline not found (install: see .ci/setup.sh)"
    if not results_dir.is_dir():
        return None, f"no Allure results in {results_dir}"
    history = out_dir / "history"
    if history.is_dir() and not _rendered_before(results_dir, history):
        shutil.copytree(history, results_dir / "history", dirs_exist_ok=True)
    _continue_build_order(results_dir)
    proc = _allure_generate(binary, results_dir, out_dir, single_file=True)
    index = out_dir / "index.html"
    if proc.returncode != 0 or not index.exists():
        return None, f"allure generate failed ({proc.returncode}): {proc.stderr.strip()[-500:]}"
    # --single-file writes no history/: the multi-file report does; keep only that.
    with tempfile.TemporaryDirectory() as tmp:
        if _allure_generate(binary, results_dir, Path(tmp), single_file=False).returncode == 0:
            shutil.copytree(Path(tmp) / "history", history, dirs_exist_ok=True)
    _copy_documents(out_dir)
    return index, "ok"


def _allure_generate(binary: str, results: Path, out: Path, *, single_file: bool) -> subprocess.CompletedProcess[str]:
    return subprocess.run([binary, "generate", *(["--single-file"] if single_file else []), "--clean",
                           "-o", str(out), str(results)], capture_output=True, text=True, timeout=300)


def _trend_orders(history: Path) -> list[int]:
    trend = history / "history-trend.json"
    points = json.loads(trend.read_text(encoding="utf-8")) if trend.is_file() else []
    return [p["buildOrder"] for p in points if isinstance(p.get("buildOrder"), int)]


def _rendered_before(results_dir: Path, history: Path) -> bool:
    """These results are already the newest build of that history (``conformance report``
    rendering a run again): feeding it back would count the run twice."""
    executor = results_dir / "executor.json"
    order = json.loads(executor.read_text(encoding="utf-8")).get("buildOrder") if executor.is_file() else None
    orders = _trend_orders(history)
    return order is not None and bool(orders) and order == max(orders)


def _continue_build_order(results_dir: Path) -> None:
    """executor.json's buildOrder: the CI's run number when it gives one, else one more than
    the last build in the kept history (Allure's trend orders its points by it)."""
    path = results_dir / "executor.json"
    if not path.is_file():
        return
    executor = json.loads(path.read_text(encoding="utf-8"))
    if "buildOrder" in executor:
        return
    ci = next((os.environ[k] for k in ("GITHUB_RUN_NUMBER", "CI_PIPELINE_IID", "BUILD_NUMBER")
               if os.environ.get(k, "").isdigit()), None)
    if ci is not None:
        executor["buildOrder"] = int(ci)
    else:
        orders = _trend_orders(results_dir / "history")
        executor["buildOrder"] = max(orders, default=0) + 1
    path.write_text(json.dumps(executor, indent=1), encoding="utf-8")


def _copy_documents(out_dir: Path) -> None:
    """The spec documents (shared/) and golden transcripts the report links to, relatively."""
    from .allure_support import GOLDEN_IN_REPORT, SPEC_IN_REPORT
    from .catalogue import shared_dir
    from .golden import golden_dir
    for src, name in ((shared_dir(), SPEC_IN_REPORT), (golden_dir(), GOLDEN_IN_REPORT)):
        if src is not None and src.is_dir():
            shutil.copytree(src, out_dir / name, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns(".*", "__pycache__", "hooks"))
