"""The certificate: per-case outcomes, counts per level, what was left out, provenance and
the verdict.

Verdict (``VERDICTS``): **CERTIFIED** when the run covered the target's whole scope
(``conformance.harness.scope``: every requirement of its kind, per claimed Connect sub-protocol),
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

from ..catalogue.requirements import LEVELS, Catalogue, default_catalogue
from .provenance import implementation_text
from ..harness.scope import SUB_PROTOCOLS

GOLDEN_IN_REPORT = "golden"  # beside the report's index.html: the golden transcripts (render_allure)

OUTCOMES = ("PASS", "NON-STRICT", "NOT-APPLICABLE", "FAIL", "BROKEN")
CERTIFIED, NOT_CERTIFIED, PARTIAL = "CERTIFIED", "NOT CERTIFIED", "PARTIAL"
VERDICTS = (CERTIFIED, NOT_CERTIFIED, PARTIAL)
ALLURE_REPORT = "allure-report/index.html"  # relative to the run's reports folder
ALLURE_VERSION = "2.46.1"  # the allure-commandline the set-up and the CI examples install


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
                     "source": req.source.short, "source_url": req.source.link, "statement": req.statement,
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
    refused = _refusals(run)
    verdict = NOT_CERTIFIED if failed or broken or refused else PARTIAL if left else CERTIFIED
    target = dict(run["target"])
    target["implementation_text"] = implementation_text(target.get("implementation", ""), target.get("version", ""))
    return {
        "format": "connect-conformance certificate 1",
        "target": target, "suite": run["suite"], "strict": strict,
        "verdict": verdict, "certified": verdict == CERTIFIED,
        "run_id": run.get("run_id"), "refused": refused,
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


def _refusals(run: dict[str, Any]) -> list[str]:
    """What keeps a run from certifying whatever its cases say: a certificate must name the
    artefact it vouches for by digest, unless the run was told not to (--no-artefact-digest)."""
    art = (run.get("provenance") or {}).get("artefact") or {}
    if art.get("sha256") or art.get("waived"):
        return []
    how = art.get("chosen") or "no provenance recorded"
    return [f"no digest of the tested artefact ({how}): declare [implementation] artefacts, "
            "or run with --no-artefact-digest, which the certificate then states"]


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
           f"| run | `{cert.get('run_id') or 'not recorded'}` |",
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
    if cert["failed"] or cert["broken"] or cert["refused"]:
        out += ["", "## Why not certified", ""]
        out += [f"- FAIL {i}" for i in cert["failed"]] + [f"- BROKEN {i}" for i in cert["broken"]]
        out += [f"- {why}" for why in cert["refused"]]
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
            f"| tested artefact | {_artefact_text(art)} |"]
    if prov.get("java"):
        rows.append(f"| Java | {prov['java']} |")
    ci = prov.get("ci")
    rows.append(f"| CI run | {ci['url'] or ci['system'] if ci else 'none (a local run)'} |")
    for d in prov["spec_documents"]:
        rows.append(f"| source | [{d['id']}]({d['url']}): {_cell(d['title'])} |")
    return rows


def _artefact_text(art: dict[str, Any]) -> str:
    if art.get("sha256"):
        names = f" ({', '.join(f'`{n}`' for n in art['names'])})" if art.get("names") else ""
        return f"{art['files']} file(s){names}, {art['chosen']}; sha256 `{art['sha256']}`"
    if art.get("waived"):
        return f"**not digested: the run was given --no-artefact-digest** ({art['chosen']})"
    return f"**no digest** ({art['chosen']})"


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


def write_certificate(reports: Path, catalogue: Catalogue | None = None, *,
                      results: Path | None = None) -> dict[str, Any]:
    """certificate.json and .md of the run in ``reports`` (its ``results``, by default
    reports/results.json); the Allure report is linked only when it was rendered from this
    run's results (its run id), never an earlier run's."""
    run = json.loads((results or reports / "results.json").read_text(encoding="utf-8"))
    if (reports / ALLURE_REPORT).is_file() and report_run_id(reports / "allure-report") == run.get("run_id"):
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
    here = Path(__file__).resolve().parents[2] / ".venv" / "node" / "node_modules" / ".bin" / "allure"
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
        return None, (f"allure-commandline not found: install it with `npm install --global "
                      f"allure-commandline@{ALLURE_VERSION}` (it runs on Java 17), or set ALLURE to its path; "
                      f"--no-html leaves the HTML out")
    if not results_dir.is_dir():
        return None, f"no Allure results in {results_dir}"
    history = out_dir / "history"
    if history.is_dir() and not _rendered_before(results_dir, history):
        shutil.copytree(history, results_dir / "history", dirs_exist_ok=True)
    _continue_build_order(results_dir)
    (out_dir / RUN_ID_FILE).unlink(missing_ok=True)  # until generated, the folder is of no run
    proc = _allure_generate(binary, results_dir, out_dir, single_file=True)
    index = out_dir / "index.html"
    if proc.returncode != 0 or not index.exists():
        return None, f"allure generate failed ({proc.returncode}): {proc.stderr.strip()[-500:]}"
    run_id = results_run_id(results_dir)
    if run_id:
        (out_dir / RUN_ID_FILE).write_text(run_id + "\n", encoding="utf-8")
    # --single-file writes no history/: the multi-file report does; keep only that.
    with tempfile.TemporaryDirectory() as tmp:
        if _allure_generate(binary, results_dir, Path(tmp), single_file=False).returncode == 0:
            shutil.copytree(Path(tmp) / "history", history, dirs_exist_ok=True)
    _copy_documents(out_dir)
    return index, "ok"


RUN_ID_FILE = "run-id"  # beside a rendered report's index.html: the run it was rendered from


def report_run_id(report_dir: Path) -> str | None:
    path = report_dir / RUN_ID_FILE
    return path.read_text(encoding="utf-8").strip() or None if path.is_file() else None


def results_run_id(results_dir: Path) -> str | None:
    """The run id the plugin wrote into Allure's environment.properties (``run.id``)."""
    env = results_dir / "environment.properties"
    if not env.is_file():
        return None
    for line in env.read_text(encoding="utf-8").splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "run.id":
            return value.strip() or None
    return None


def check_same_run(reports: Path) -> None:
    """``conformance report`` refuses a folder whose results.json and Allure results are of
    two different runs (a later run written only one of them): CertificateError naming both."""
    run_id = json.loads((reports / "results.json").read_text(encoding="utf-8")).get("run_id")
    allure_id = results_run_id(reports / "allure-results")
    if (reports / "allure-results").is_dir() and allure_id != run_id:
        raise CertificateError(f"{reports}: results.json is of run {run_id or '(none recorded)'} but "
                               f"allure-results/ of run {allure_id or '(none recorded)'}: they belong to "
                               "different runs; run again, or remove the stale allure-results/")


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
    """The golden transcripts the report links to, relatively (sources are public URLs)."""
    from ..harness.golden import golden_dir
    for src, name in ((golden_dir(), GOLDEN_IN_REPORT),):
        if src is not None and src.is_dir():
            shutil.copytree(src, out_dir / name, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns(".*", "__pycache__", "hooks"))
