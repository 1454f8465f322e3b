"""The certificate: per-requirement outcomes, counts per level, and the verdict.

A target is **certified** when no requirement FAILed (a MUST not met; under strict mode a
SHOULD not met counts too) and nothing is BROKEN. A requirement of the suite with no
recorded result counts as BROKEN: a run that did not finish certifies nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

from .catalogue import Catalogue, default_catalogue

OUTCOMES = ("PASS", "NON-STRICT", "NOT-APPLICABLE", "FAIL", "BROKEN")


def build_certificate(run: dict[str, Any], catalogue: Catalogue | None = None) -> dict[str, Any]:
    cat = catalogue or default_catalogue()
    by_id = {r["id"]: r for r in run["results"]}
    rows = []
    for rid in run["selected"]:
        res = by_id.get(rid) or {"outcome": "BROKEN", "message": "no result was recorded for this requirement"}
        if rid in cat:
            req = cat[rid]
            rows.append({"id": rid, "level": req.level, "outcome": res["outcome"],
                         "message": res.get("message", ""), "feature": req.feature,
                         "source": f"{req.source.file} § {req.source.section}", "statement": req.statement})
        else:  # a golden transcript rule (fixtures/golden/rules.json): binding like a MUST
            rows.append({"id": rid, "level": "MUST", "outcome": res["outcome"], "golden": True,
                         "message": res.get("message", ""), "feature": res.get("api", "golden"),
                         "source": "fixtures/golden/" + ", ".join(res.get("transcripts", [])),
                         "statement": res.get("title", "golden transcript")})
    counts: dict[str, dict[str, int]] = {}
    for level in ("MUST", "SHOULD", "MAY"):
        c = Counter(r["outcome"] for r in rows if r["level"] == level)
        counts[level] = {o: c.get(o, 0) for o in OUTCOMES}
    strict = bool(run.get("strict"))
    failed = [r["id"] for r in rows if r["outcome"] == "FAIL" or (strict and r["outcome"] == "NON-STRICT")]
    broken = [r["id"] for r in rows if r["outcome"] == "BROKEN"]
    certified = not failed and not broken
    return {
        "target": run["target"], "suite": run["suite"], "strict": strict,
        "versions": run.get("versions", {}), "started": run.get("started"), "finished": run.get("finished"),
        "verdict": "CERTIFIED" if certified else "NOT CERTIFIED",
        "certified": certified, "failed": failed, "broken": broken,
        "counts": counts, "requirements": rows,
    }


def render_markdown(cert: dict[str, Any]) -> str:
    t = cert["target"]
    out = [f"# Conformance certificate: {t['name']}", "",
           f"**Verdict: {cert['verdict']}**" + (" (strict)" if cert["strict"] else ""), "",
           "| | |", "| --- | --- |",
           f"| target file | `{t['path']}` |", f"| kind | {t['kind']} |",
           f"| implementation | {t['implementation']} {t['version']} |",
           f"| protocols claimed | {', '.join(t['protocols'])} |",
           f"| suite | {cert['suite']} |"]
    if t.get("mutant"):
        out.append(f"| mutant | {t['mutant']} |")
    for k, v in sorted(cert["versions"].items()):
        if k != "executable":
            out.append(f"| {k} | {v} |")
    out += ["", "## Counts", "", "| level | " + " | ".join(OUTCOMES) + " |",
            "| --- |" + " --- |" * len(OUTCOMES)]
    for level, c in cert["counts"].items():
        out.append(f"| {level} | " + " | ".join(str(c[o]) for o in OUTCOMES) + " |")
    if cert["failed"] or cert["broken"]:
        out += ["", "## Why not certified", ""]
        out += [f"- FAIL {i}" for i in cert["failed"]] + [f"- BROKEN {i}" for i in cert["broken"]]
    out += ["", "## Requirements", "", "| id | level | outcome | requirement | detail |",
            "| --- | --- | --- | --- | --- |"]
    for r in cert["requirements"]:
        detail = r["message"].splitlines()[0] if r["message"] else ""
        out.append(f"| {r['id']} | {r['level']} | {r['outcome']} | {_cell(r['statement'])} | {_cell(detail)} |")
    return "\n".join(out) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def write_certificate(reports: Path, catalogue: Catalogue | None = None) -> dict[str, Any]:
    run = json.loads((reports / "results.json").read_text(encoding="utf-8"))
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
    """One self-contained HTML file (allure generate --single-file); (None, why) if impossible."""
    binary = allure_binary()
    if binary is None:
        return None, "allure-commandline not found (install: see .ci/setup.sh)"
    if not results_dir.is_dir():
        return None, f"no Allure results in {results_dir}"
    proc = subprocess.run([binary, "generate", "--single-file", "--clean", "-o", str(out_dir),
                           str(results_dir)], capture_output=True, text=True, timeout=300)
    index = out_dir / "index.html"
    if proc.returncode != 0 or not index.exists():
        return None, f"allure generate failed ({proc.returncode}): {proc.stderr.strip()[-500:]}"
    return index, "ok"
