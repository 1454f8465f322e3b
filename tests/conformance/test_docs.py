"""The docs site (docs/, mkdocs.yml): it builds strictly (a broken link, a missing anchor or a
stale include fails), the counts it states are the project's, its references are the sources
table, and the worked example of "Certify your own worker" runs as written, from a folder
outside the checkout."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from conformance.catalogue.requirements import default_catalogue
from conformance import suites
from conformance.harness.cases import load_cases
from conformance.harness.mutant_declarations import mutants_of

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
EXIT_PARTIAL = 4


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    errata = (tmp_path / "site" / "errata" / "index.html").read_text()
    assert "Numbers chosen" in errata  # the include of schemas/ERRATA.md, not the include line
    assert "--8&lt;--" not in errata


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    """The strict build is a check: the same site with one dangling link is refused."""
    site = tmp_path / "copy"
    (site / "docs").mkdir(parents=True)
    for page in DOCS.glob("*.md"):
        (site / "docs" / page.name).write_text(page.read_text())
    (site / "docs" / "index.md").write_text((DOCS / "index.md").read_text() + "\n[gone](no-such-page.md)\n")
    config = (ROOT / "mkdocs.yml").read_text().replace('base_path: ["."]', f"base_path: [{json.dumps(str(ROOT))}]")
    (site / "mkdocs.yml").write_text(config)
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site / "out")],
                       cwd=site, capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and "no-such-page.md" in r.stdout + r.stderr


def _count_files(pattern: str) -> int:
    return len(list(ROOT.glob(pattern)))


def counts() -> dict[str, int]:
    cat, cases = default_catalogue(), load_cases(suites)
    golden = [r for r in cat if r.transcripts]
    workers = [m.base for m in mutants_of("worker")]
    return {
        "with_transcripts": len(golden),
        "listings": sum(len(r.transcripts) for r in golden),
        "golden_files": _count_files("fixtures/golden/*.jsonl"),
        "with_live": sum(r.id in cases for r in golden),
        "only_transcripts": sum(r.id not in cases for r in golden),
        "coordinator_mutants": sum(not m.group_log for m in mutants_of("coordinator")),
        "worker_mutants": len(workers),
        "kafka_python_mutants": workers.count("kafka-python-worker"),
        "draft_mutants": workers.count("draft-worker"),
    }


# Each phrase the docs use for a count, with the counts it must state (every occurrence).
PHRASES = {
    r"(\d+) have golden transcripts \((\d+) listings of (\d+) files\): (\d+)\s+have a live case too, (\d+)":
        ("with_transcripts", "listings", "golden_files", "with_live", "only_transcripts"),
    r"(\d+) golden transcripts": ("golden_files",),
    r"(\d+) coordinator mutants": ("coordinator_mutants",),
    r"(\d+) worker mutants \((\d+) of the kafka-python worker,\s+`[^`]+`, and (\d+) of the draft worker\)":
        ("worker_mutants", "kafka_python_mutants", "draft_mutants"),
    r"(\d+) worker\s+mutants, each": ("worker_mutants",),
}


def test_counts_in_the_docs_are_the_projects() -> None:
    want = counts()
    text = "\n".join(p.read_text() for p in [*DOCS.glob("*.md"), ROOT / "README.md"])
    for phrase, names in PHRASES.items():
        found = re.findall(phrase.replace(" ", r"\s+"), text)  # a phrase may wrap
        assert found, f"no {phrase!r} in the docs (the test would check nothing)"
        for values in found:
            values = (values,) if isinstance(values, str) else values
            assert {n: int(v) for n, v in zip(names, values)} == {n: want[n] for n in names}, phrase


def test_references_are_the_sources_table() -> None:
    page = (DOCS / "references.md").read_text()
    for doc in default_catalogue().documents.values():
        assert f"| `{doc.id}` | {doc.kind} | [{doc.title}]({doc.url}) |" in page, doc.id


def test_no_page_points_at_files_users_do_not_have() -> None:
    for page in [*DOCS.glob("*.md"), ROOT / "README.md", ROOT / "conformance" / "README.md"]:
        text = page.read_text()
        assert "DESIGN.md" not in text.replace("DESIGN.md §", ""), page.name
        for link in re.findall(r"\]\(((?:\.\./)+[^)#\s]*)", text):  # a relative link stays in the checkout
            assert (page.parent / link).resolve().is_relative_to(ROOT), (page.name, link)


def test_the_worked_example_runs_from_a_folder_outside_the_checkout(tmp_path: Path) -> None:
    page = (DOCS / "certify-your-worker.md").read_text()
    [toml] = re.findall(r"```toml\n# my-worker.toml\n(.*?)```", page, re.S)
    [commands] = re.findall(r"```sh\n(conformance list .*?)```", page, re.S)
    (tmp_path / "my-worker.toml").write_text(toml)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # the suite as installed; the folder is the user's
    ran = []
    for line in commands.splitlines():
        words = line.split("#")[0].split()
        if words[:2] == ["conformance", "run"] and "-k" not in words:
            continue  # the whole scope: what make certify does for the bundled worker
        r = subprocess.run([sys.executable, "-m", "conformance.cli", *words[1:], "-n", "0", "--no-html"]
                           if words[1] == "run" else [sys.executable, "-m", "conformance.cli", *words[1:]],
                           cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
        ran.append(words[1])
        if words[1] == "list":
            assert r.returncode == 0 and "CLS-W-01" in r.stdout, r.stderr[-2000:]
        else:
            assert r.returncode == EXIT_PARTIAL, r.stdout[-3000:] + r.stderr[-2000:]
            cert = json.loads((tmp_path / "reports" / "certificate.json").read_text())
            rows = {x["id"]: x["outcome"] for x in cert["requirements"]}
            # The case selected, and the always-on invariants judged over its exchanges.
            assert rows.pop("CLS-W-01") == "PASS", rows
            assert rows and all("-INV-" in r and o in ("PASS", "NOT-APPLICABLE") for r, o in rows.items()), rows
    assert ran == ["list", "run"]
