"""Allure for the conformance suite: labels per case, attachments for failed cases, and the
run-level files (environment.properties, categories.json, executor.json).

Labels: epic = protocol (the first of the requirement's protocols the target claims),
feature = API or behaviour, story and ``allure.id`` = requirement id, a link to the spec
section, parameters (target, level, protocols). Without ``--alluredir`` every call is a
no-op (allure-pytest is not listening).
"""

from __future__ import annotations

import json
import urllib.parse
from pathlib import Path
from typing import Any

from .catalogue import Requirement, shared_dir
from .harness.outcomes import CaseResult
from .target import Target

PROTOCOL_TITLES = {
    "classic": "Classic group protocol (JoinGroup/SyncGroup)",
    "eager": "Connect protocol v0 (eager)",
    "compatible": "Connect protocol v1 (compatible, KIP-415)",
    "sessioned": "Connect protocol v2 (sessioned)",
    "connect": "KIP-848 connect group (draft)",
    "sticky": "Sticky assignor generation (KIP-341)",
}


def spec_link(req: Requirement) -> str:
    """A file URL to the source document, with a text fragment for the innermost heading."""
    base = shared_dir()
    path = (base / req.source.file).resolve() if base is not None else Path(req.source.file)
    heading = req.source.section.split(" > ")[-1]
    return path.as_uri() + "#:~:text=" + urllib.parse.quote(heading)


def label_case(req: Requirement, target: Target, result: CaseResult) -> None:
    try:
        import allure
    except ImportError:  # allure-pytest is optional for plain runs
        return
    claimed = ([result.protocol] if result.protocol else
               [p for p in req.protocols if p in target.protocols] or list(req.protocols))
    allure.dynamic.epic(PROTOCOL_TITLES.get(claimed[0], claimed[0]))
    allure.dynamic.feature(req.feature)
    allure.dynamic.story(req.id)
    allure.dynamic.id(result.case_id)
    allure.dynamic.title(f"{result.case_id}: {req.statement}")
    allure.dynamic.tag(req.level)
    allure.dynamic.severity({"MUST": "critical", "SHOULD": "normal", "MAY": "minor"}[req.level])
    allure.dynamic.link(spec_link(req), name=f"{req.source.file} § {req.source.section}")
    allure.dynamic.parameter("target", target.name)
    allure.dynamic.parameter("level", req.level)
    allure.dynamic.parameter("protocols", ", ".join(claimed))
    desc = (f"**{req.id}** ({req.level}, binds {' and '.join(req.binds)})\n\n{req.statement}\n\n"
            f"Source: `{req.source.file}` § {req.source.section}")
    if req.errata:
        desc += f"\n\nResolved by schemas/ERRATA.md entries {', '.join(map(str, req.errata))}."
    desc += f"\n\nOutcome: **{result.outcome}** {result.message}"
    if result.notes:
        desc += "\n\nNotes:\n" + "\n".join(f"- {n}" for n in result.notes)
    allure.dynamic.description(desc)


def label_golden(rule: Any, target: Target, result: CaseResult) -> None:
    """A golden transcript case: epic classic, feature = its API, story/id = the rule id,
    a link to the transcript; on failure the replay report and the transcripts."""
    try:
        import allure
    except ImportError:
        return
    allure.dynamic.epic(PROTOCOL_TITLES["classic"] + " - golden transcripts")
    allure.dynamic.feature(rule.api or "golden")
    allure.dynamic.story(rule.id)
    allure.dynamic.id(rule.id)
    allure.dynamic.title(f"{rule.id}: {rule.title}")
    allure.dynamic.tag("MUST")
    allure.dynamic.severity("critical")
    for p in rule.transcripts:
        allure.dynamic.link(p.resolve().as_uri(), name=f"fixtures/golden/{p.name}")
    allure.dynamic.parameter("target", target.name)
    allure.dynamic.description(f"**{rule.id}** (golden transcript, {rule.source})\n\n{rule.title}\n\n"
                               f"Outcome: **{result.outcome}** {result.message}")
    if result.outcome.value in ("FAIL", "BROKEN", "NON-STRICT"):
        allure.attach(result.message, "replay report", allure.attachment_type.TEXT)
        for p in rule.transcripts:
            allure.attach.file(str(p), p.name, extension="jsonl")


def attach_failure(result: CaseResult) -> None:
    """What was expected and seen, then the evidence."""
    try:
        import allure
    except ImportError:
        return
    summary = {"outcome": result.outcome.value, "message": result.message,
               "expected": result.record()["expected"], "actual": result.record()["actual"]}
    allure.attach(json.dumps(summary, indent=1), "expected vs actual",
                  allure.attachment_type.JSON)
    attach_evidence(result)


def attach_evidence(result: CaseResult) -> None:
    """The case's transcript (JSON), a pcap of the same frames and its other attachments
    (a worker's log)."""
    try:
        import allure
    except ImportError:
        return
    if not result.transcript and not result.attachments:
        return
    allure.attach(json.dumps(result.transcript, indent=1), "transcript",
                  allure.attachment_type.JSON)
    if result.frames:
        from fakebroker.script.pcap import Exchange, pcap_bytes
        frames = sorted((Exchange(c, d, f, t) for c, d, f, t in result.frames), key=lambda e: e.time)
        port = 9092
        allure.attach(pcap_bytes(frames, port), "capture.pcap", extension="pcap")
    for name, text in result.attachments.items():
        allure.attach(text, name, allure.attachment_type.TEXT)


CATEGORIES = [
    {"name": "FAIL: a MUST is not met", "matchedStatuses": ["failed"],
     "messageRegex": "(?s).*FAIL .*"},
    {"name": "NON-STRICT: a SHOULD is not met", "matchedStatuses": ["skipped", "failed"],
     "messageRegex": "(?s).*NON-STRICT.*"},
    {"name": "NOT-APPLICABLE", "matchedStatuses": ["skipped"],
     "messageRegex": "(?s).*NOT-APPLICABLE.*"},
    {"name": "BROKEN: the harness or the target could not run", "matchedStatuses": ["broken"]},
]


def write_allure_extras(alluredir: Path, doc: dict[str, Any]) -> None:
    alluredir.mkdir(parents=True, exist_ok=True)
    t = doc["target"]
    props = {"target": t["name"], "target.kind": t["kind"], "implementation": t["implementation"],
             "implementation.version": t["version"], "protocols": ",".join(t["protocols"]),
             "suite": doc["suite"], "strict": str(doc["strict"]).lower()}
    if t.get("mutant"):
        props["mutant"] = t["mutant"]
    props.update({f"version.{k}": v for k, v in doc["versions"].items() if k != "executable"})
    prov = doc.get("provenance") or {}
    if prov:
        props.update({"date.utc": prov["finished"], "suite.commit": prov["suite"]["commit"] or "not a checkout",
                      "catalogue.sha256": prov["catalogue"]["sha256"],
                      "artefact.sha256": prov["artefact"]["sha256"] or "none"})
        if prov.get("ci"):
            props["ci.url"] = prov["ci"]["url"]
        if prov.get("java"):
            props["java"] = prov["java"]
    (alluredir / "environment.properties").write_text(
        "".join(f"{k}={_escape(str(v))}\n" for k, v in props.items()), encoding="utf-8")
    (alluredir / "categories.json").write_text(json.dumps(CATEGORIES, indent=1), encoding="utf-8")
    from .provenance import implementation_text
    executor = {"name": "connect-conformance", "type": "conformance",
                "buildName": f"{t['name']} {t['version']}",
                "reportName": f"Conformance of {implementation_text(t['implementation'], t['version'])} "
                              f"({doc['suite']} suite)"}
    if prov.get("ci"):
        executor["buildUrl"] = prov["ci"]["url"]
    (alluredir / "executor.json").write_text(json.dumps(executor, indent=1), encoding="utf-8")


def _escape(v: str) -> str:
    return v.replace("\\", "\\\\").replace("\n", "\\n")
