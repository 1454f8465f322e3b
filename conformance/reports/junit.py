"""A certificate as JUnit XML, for CI systems that show test results (``conformance run
--junitxml FILE``).

One ``testcase`` per case (with its duration): name = case id and requirement title, classname =
``conformance.<target>.<level>``. PASS has no outcome element;
FAIL is a ``failure`` (BROKEN an ``error``) with the message as text; NOT-APPLICABLE and
NON-STRICT are ``skipped`` with the outcome and message (NON-STRICT is a ``failure`` under
strict mode); a case the run left out is ``skipped`` with "LEFT OUT" and the reason. A
requirement's cases (its live case, its golden transcripts) and their outcomes are the
testcase's ``system-out``. The
suite's properties carry the verdict, so a reader of the file alone sees a PARTIAL run.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from .certificate import cases_text


def junit_tree(cert: dict[str, Any]) -> ET.ElementTree:
    target = cert["target"]["name"]
    rows = [(r, r["level"]) for r in cert["requirements"]]
    suite = ET.Element("testsuite", name=f"conformance {target}")
    props = ET.SubElement(suite, "properties")
    for name, value in (("verdict", cert["verdict"]), ("target", target),
                        ("implementation", cert["target"].get("implementation_text", "")),
                        ("date", cert["provenance"].get("finished", ""))):
        ET.SubElement(props, "property", name=name, value=str(value))
    failures = errors = skipped = 0
    for row, group in rows:
        case = ET.SubElement(suite, "testcase", name=f"{row['id']}: {row['statement']}",
                             classname=f"conformance.{target}.{group}", time=f"{row.get('duration_s', 0.0):.3f}")
        outcome, message = row["outcome"], row["message"]
        if outcome == "FAIL" or (outcome == "NON-STRICT" and cert["strict"]):
            failures += 1
            ET.SubElement(case, "failure", message=f"{outcome}: {message.splitlines()[0] if message else ''}",
                          type=outcome).text = message
        elif outcome == "BROKEN":
            errors += 1
            ET.SubElement(case, "error", message=f"BROKEN: {message.splitlines()[0] if message else ''}",
                          type="BROKEN").text = message
        elif outcome in ("NOT-APPLICABLE", "NON-STRICT"):
            skipped += 1
            ET.SubElement(case, "skipped", message=f"{outcome}: {message}")
        if row.get("cases"):  # after the outcome element, as JUnit's schema orders them
            ET.SubElement(case, "system-out").text = "cases: " + cases_text(row["cases"])
    for left in cert["left_out"]:
        skipped += 1
        case = ET.SubElement(suite, "testcase", name=left["id"], classname=f"conformance.{target}.left-out")
        ET.SubElement(case, "skipped", message=f"LEFT OUT: {left['reason']}")
    suite.set("tests", str(len(rows) + len(cert["left_out"])))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", str(skipped))
    return ET.ElementTree(suite)


def write_junit(cert: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tree = junit_tree(cert)
    ET.indent(tree)
    tree.write(path, encoding="utf-8", xml_declaration=True)
