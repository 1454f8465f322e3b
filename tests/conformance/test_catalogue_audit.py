"""The catalogue audit (issue #25): every requirement that cited the project's own notes was
audited, the outcome is recorded, and the checked-in page is the rendering of both."""

from __future__ import annotations

from pathlib import Path

from conformance.catalogue.requirements import default_catalogue
from conformance.catalogue.audit import load_audit, render

ROOT = Path(__file__).resolve().parents[2]


def test_the_page_is_current() -> None:
    page = (ROOT / "docs" / "catalogue-audit.md").read_text(encoding="utf-8")
    assert page == render(), "docs/catalogue-audit.md is stale: python -m conformance.catalogue.audit > docs/catalogue-audit.md"


def test_every_requirement_citing_apache_behaviour_was_audited_and_none_is_a_must() -> None:
    cat, audit = default_catalogue(), load_audit()
    behaviour = {r.id for r in cat if r.source.doc.kind != "spec"}
    assert behaviour and behaviour <= set(audit)
    assert all(cat[i].level != "MUST" for i in behaviour)
    assert set(audit) <= {r.id for r in cat}


def test_each_outcome_matches_the_catalogue() -> None:
    cat = default_catalogue()
    for rid, a in load_audit().items():
        r = cat[rid]
        if a["outcome"] == "demoted":
            assert (a["level_before"], r.level) == ("MUST", "SHOULD"), rid
        elif a["outcome"] == "kept SHOULD":
            assert a["level_before"] == r.level == "SHOULD" and r.source.doc.kind != "spec", rid
        else:
            assert a["outcome"] == "cites a specification" and r.source.doc.kind == "spec", rid
        assert a["was"].startswith("DESIGN.md § ") and len(a["basis"].split()) >= 5, rid
