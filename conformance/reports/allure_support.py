"""Allure for the conformance suite: labels per case, attachments for failed cases, and the
run-level files (environment.properties, categories.json, executor.json, the certificate as
a result of its own).

Labels: epic = protocol (the first of the requirement's protocols the target claims),
feature = API or behaviour, story and ``allure.id`` = requirement id; the Suites tree is
parentSuite = protocol, suite = family (``CLS``, ``CLS-W``, ``CONN``, ``K341``, ``C848``, whom
it binds), subSuite = API or behaviour, and the Packages tree the same path; the wire
conversation as one step per exchange; a link to the spec section relative to the report
(``spec/``, copied there by ``certificate.render_allure``); parameters (target, level,
protocols). Without ``--alluredir`` every call is a no-op (allure-pytest is not listening).
"""

from __future__ import annotations

import json
import re
import time
import urllib.parse
import uuid
from pathlib import Path
from typing import Any

from fakebroker.exchange.transcript import Event, Transcript

from ..catalogue.requirements import Requirement
from .certificate import GOLDEN_IN_REPORT, build_certificate, render_markdown
from ..harness.outcomes import CaseResult
from ..harness.target import Target

PROTOCOL_TITLES = {
    "classic": "Classic group protocol (JoinGroup/SyncGroup)",
    "eager": "Connect protocol v0 (eager)",
    "compatible": "Connect protocol v1 (compatible, KIP-415)",
    "sessioned": "Connect protocol v2 (sessioned)",
    "connect": "KIP-848 connect group (draft)",
    "sticky": "Sticky assignor generation (KIP-341)",
}




class _Bare:
    """A parameter value Allure shows as is: allure-pytest quotes a ``str`` (``'MUST'``)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def family(case_id: str) -> str:
    """The id's family: ``CLS-W`` for the classic worker rules, else its first part."""
    return "CLS-W" if case_id.startswith("CLS-W-") else case_id.split("-")[0]


def case_view(req: Requirement, target: Target, result: CaseResult) -> dict[str, Any]:
    """What the report shows of one requirement's result: title, labels (name, value), links
    (url, name), parameters (name, text) and description; the same for a test allure-pytest
    records (``label_case``) and for a result the run writes itself (``write_invariant_results``)."""
    claimed = ([result.protocol] if result.protocol else
               [p for p in req.protocols if p in target.protocols] or list(req.protocols))
    epic = PROTOCOL_TITLES.get(claimed[0], claimed[0])
    suite, sub = f"{family(req.id)} ({' and '.join(req.binds)})", req.feature
    labels = [("epic", epic), ("feature", req.feature), ("story", req.id), ("as_id", result.case_id),
              ("tag", req.level), ("severity", {"MUST": "critical", "SHOULD": "normal", "MAY": "minor"}[req.level]),
              ("parentSuite", epic), ("suite", suite), ("subSuite", sub),
              ("package", ".".join(x.replace(".", "_") for x in (epic, suite, sub)))]
    if req.transcripts:
        labels.append(("tag", "golden"))
    links = [(req.source.link, f"{req.source.short}: {req.source.doc.title}")]
    links += [(f"{GOLDEN_IN_REPORT}/{urllib.parse.quote(name)}", f"fixtures/golden/{name}") for name in req.transcripts]
    desc = (f"**{req.id}** ({req.level}, binds {' and '.join(req.binds)})\n\n{req.statement}\n\n"
            f"Source: [{req.source.short}]({req.source.link}) ({req.source.doc.title})")
    if result.cases:  # one test per requirement; its cases, each with its own outcome
        desc += "\n\nCases (the requirement passes only if each passes):\n" + "\n".join(
            f"- {c['case']}: {c['outcome']}" + (f" ({c['detail']})" if c["detail"] else "") for c in result.cases)
    if req.errata:
        desc += f"\n\nResolved by schemas/ERRATA.md entries {', '.join(map(str, req.errata))}."
    desc += f"\n\nOutcome: **{result.outcome}** {result.message}"
    if result.notes:
        desc += "\n\nNotes:\n" + "\n".join(note_markdown(n) for n in result.notes if n.strip())
    labels.append((OUTCOME_LABEL, result.outcome.value))
    return {"title": f"{result.case_id}: {req.statement}", "labels": labels, "links": links,
            "parameters": [("target", target.name), ("level", req.level), ("protocols", ", ".join(claimed))],
            "description": desc}


def label_case(req: Requirement, target: Target, result: CaseResult) -> None:
    try:
        import allure
    except ImportError:  # allure-pytest is optional for plain runs
        return
    view = case_view(req, target, result)
    allure.dynamic.title(view["title"])
    for name, value in view["labels"]:
        allure.dynamic.label(name, value)
    for url, name in view["links"]:
        allure.dynamic.link(url, name=name)
    for name, text in view["parameters"]:
        allure.dynamic.parameter(name, _Bare(text))
    allure.dynamic.description(view["description"])
    if req.transcripts and result.outcome.value in ("FAIL", "BROKEN", "NON-STRICT"):
        from ..harness.golden import transcript_paths
        for path in transcript_paths(req):
            allure.attach.file(str(path), path.name, extension="jsonl")


def note_markdown(note: str) -> str:
    """A note as a list item: its first line, and its body (a worker's log tail) as a code
    block under it, or "(empty)" when a note announcing a body has none."""
    head, _, body = note.strip("\n").partition("\n")
    body = body.strip("\n")
    if body:
        return f"- {head}\n\n  ```\n" + "\n".join(f"  {line}" for line in body.splitlines()) + "\n  ```"
    return f"- {head} (empty)" if head.rstrip().endswith(":") else f"- {head}"


# An outcome as Allure shows it: what allure-pytest records for the test a case's outcome
# becomes (conformance.plugin.report_outcome: NOT-APPLICABLE skips; NON-STRICT as mark_non_strict
# rewrites it).
ALLURE_STATUS = {"PASS": "passed", "FAIL": "failed", "NON-STRICT": "unknown", "NOT-APPLICABLE": "skipped",
                 "BROKEN": "broken"}


def write_invariant_results(alluredir: Path, results: list[CaseResult], target: Target) -> None:
    """The invariants' results (``conformance.invariants.report``): no test of their own runs
    them, the session's end judges them over every case, so each is written as an Allure
    result here, labelled as a case is, its cases (and the exchange that broke the rule) in
    its description, what was expected and seen attached when it fails."""
    from ..catalogue.requirements import default_catalogue
    alluredir.mkdir(parents=True, exist_ok=True)
    now = int(time.time() * 1000)
    for result in results:
        view = case_view(default_catalogue()[result.requirement_id], target, result)
        status = ALLURE_STATUS[result.outcome.value]
        message = (f"{NON_STRICT_MESSAGE}: {result.message}" if result.outcome.value == "NON-STRICT"
                   else f"{result.outcome.value} {result.case_id}: {result.message}")
        attachments = []
        if result.outcome.value in ("FAIL", "NON-STRICT"):
            att = f"{uuid.uuid4()}-attachment.json"
            summary = {"outcome": result.outcome.value, "message": result.message,
                       "expected": result.record()["expected"], "actual": result.record()["actual"]}
            (alluredir / att).write_text(json.dumps(summary, indent=1), encoding="utf-8")
            attachments.append({"name": "expected vs actual", "source": att, "type": "application/json"})
        doc = {"uuid": str(uuid.uuid4()), "historyId": f"invariant:{result.case_id}",
               "testCaseId": f"invariant:{result.requirement_id}",
               "fullName": f"conformance.invariants[{result.case_id}]", "name": view["title"],
               "status": status, "statusDetails": {"message": message}, "stage": "finished",
               "start": now, "stop": now, "description": view["description"],
               "labels": [{"name": n, "value": v} for n, v in view["labels"]],
               "links": [{"url": u, "name": n, "type": "link"} for u, n in view["links"]],
               "parameters": [{"name": n, "value": v} for n, v in view["parameters"]],
               "attachments": attachments}
        (alluredir / f"{doc['uuid']}-result.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")


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
    """The case's transcript in the project's one transcript format (JSON lines, as
    ``serve --record`` writes them: ``fakebroker pcap``, ``replay`` and ``ingest`` read it),
    a pcap of the same frames with the broker on 9092, the port Wireshark dissects as Kafka
    (the target's own port is in the transcript's header), and its other attachments (a
    worker's log)."""
    try:
        import allure
    except ImportError:
        return
    t = result.transcript
    if t is not None and t.events:
        _exchange_steps(allure, t)
        allure.attach("".join(line + "\n" for line in t.lines()), TRANSCRIPT_ATTACHMENT,
                      "text/plain", extension="jsonl")
        from fakebroker.protocol import default_registry
        from fakebroker.script.export import exchanges
        from fakebroker.script.pcap import pcap_bytes
        allure.attach(pcap_bytes(exchanges(t, default_registry())), PCAP_ATTACHMENT, extension="pcap")
    for name, text in result.attachments.items():
        allure.attach(text, name, allure.attachment_type.TEXT)


def exchange_title(request: Event, response: Event | None, t0: float | None) -> str:
    """``+0.012 s m1: JoinGroup v9 #1 -> UNKNOWN_MEMBER_ID (79)``: when it was sent (from the
    first exchange), who sent it, and the answer's error by name, or that none came."""
    from fakebroker.protocol.error_codes import error_text
    sent = request.time
    when = f"+{sent - t0:.3f} s " if sent is not None and t0 is not None else ""
    head = f"{when}{request.conn}: {request.api or request.api_key} v{request.version} #{request.correlation_id}"
    if response is None:
        return head + " -> no answer"
    code = (response.body or {}).get("ErrorCode")
    return head + (f" -> {error_text(code)}" if isinstance(code, int) else " -> answered")


def _exchange_steps(allure: Any, t: Transcript) -> None:
    """The wire conversation as steps, one per exchange, in the order sent, each spanning
    its request to its answer (the steps are written after the case ran, so their start and
    stop are set from the transcript's times, not from when they were written)."""
    requests = t.requests()
    answers = {(e.conn, e.correlation_id): e for e in t.events if e.kind == "response"}
    t0 = min((e.time for e in requests if e.time is not None), default=None)
    test = _current_test()
    before = len(test.steps) if test is not None else 0
    for e in requests:  # the transcript is in wall-clock order
        with allure.step(exchange_title(e, answers.get((e.conn, e.correlation_id)), t0)):
            pass
    if test is None:
        return
    for step, e in zip(test.steps[before:], requests):
        answer = answers.get((e.conn, e.correlation_id))
        if e.time is not None:
            step.start = int(e.time * 1000)
            step.stop = int((answer.time if answer is not None and answer.time is not None else e.time) * 1000)


def _current_test() -> Any:
    """allure-pytest's result of the running test, whose steps these are (None when
    allure-pytest is not listening)."""
    from allure_commons import plugin_manager
    from allure_commons.model2 import TestResult
    for plugin in plugin_manager.get_plugins():
        reporter = getattr(plugin, "allure_logger", None)
        if reporter is not None:
            return reporter.get_last_item(TestResult)
    return None


TRANSCRIPT_ATTACHMENT = "transcript.jsonl"
PCAP_ATTACHMENT = "capture.pcap"
OUTCOME_LABEL = "conformance.outcome"  # the case's outcome, for rewriting NON-STRICT below
NON_STRICT_MESSAGE = "SHOULD not met (NON-STRICT)"

CATEGORIES = [
    {"name": "FAIL: a MUST is not met", "matchedStatuses": ["failed"],
     "messageRegex": "(?s).*FAIL .*"},
    {"name": "NON-STRICT: a SHOULD is not met", "matchedStatuses": ["unknown", "failed"],
     "messageRegex": r"(?s)(SHOULD not met \(NON-STRICT\)|.*NON-STRICT \S+ \(SHOULD, strict mode\)).*"},
    {"name": "NOT-APPLICABLE", "matchedStatuses": ["skipped"],
     "messageRegex": "(?s).*NOT-APPLICABLE.*"},
    {"name": "BROKEN: the harness or the target could not run", "matchedStatuses": ["broken"]},
]


def keep_fixture_teardowns_known(fixturedef: Any) -> None:
    """allure-pytest wraps every fixture finalizer as a teardown stage, pytest's own
    post-finalizer hook too; that one closes the fixture's Allure container before its
    stage ends, leaving an "unknown" teardown per fixture. Unwrap that one."""
    fins = getattr(fixturedef, "_finalizers", [])
    for i, fin in enumerate(fins):
        inner = getattr(fin, "_fixture_function", None)
        if inner is not None and getattr(inner, "__name__", "") == "<lambda>":
            fins[i] = inner


CERTIFICATE_RESULT = {"CERTIFIED": "passed", "NOT CERTIFIED": "failed", "PARTIAL": "unknown"}


def verdict_line(cert: dict[str, Any]) -> str:
    """``PARTIAL: MUST PASS=10 NOT-APPLICABLE=2; SHOULD ...; left out 283``."""
    parts = [f"{lvl} " + " ".join(f"{k}={v}" for k, v in c.items() if v)
             for lvl, c in cert["counts"].items() if any(c.values())]
    g = cert["goldens"]
    if g["recorded"]:
        parts.append(f"goldens {g['replayed']} replayed of {g['recorded']}")
    if cert["left_out"]:
        parts.append(f"left out {len(cert['left_out'])}")
    return f"{cert['verdict']}: " + "; ".join(parts)


def _write_certificate_result(alluredir: Path, cert: dict[str, Any], doc: dict[str, Any]) -> None:
    """The verdict as a test result of its own (top of the Suites tree, status passed /
    failed / unknown for PARTIAL), the certificate attached: Allure's overview counts
    NOT-APPLICABLE as skipped and would otherwise show a pass rate and no verdict."""
    att = f"{uuid.uuid4()}-attachment.md"
    (alluredir / att).write_text(render_markdown(cert), encoding="utf-8")
    prov = doc.get("provenance") or {}
    now = int(time.time() * 1000)
    started = now - int(prov.get("duration_s", 0) * 1000)  # the run's span on the timeline
    line = verdict_line(cert)
    result = {
        "uuid": str(uuid.uuid4()), "historyId": f"certificate:{doc['target']['name']}",
        "testCaseId": f"certificate:{doc['target']['name']}", "fullName": "conformance.reports.certificate",
        "name": f"Verdict: {line}", "status": CERTIFICATE_RESULT[cert["verdict"]],
        "statusDetails": {"message": line + "".join(f"\nFAIL {i}" for i in cert["failed"])
                          + "".join(f"\nBROKEN {i}" for i in cert["broken"])},
        "stage": "finished", "start": started, "stop": now,
        "description": f"**Verdict: {cert['verdict']}**\n\n{line}",
        "labels": [{"name": "parentSuite", "value": "Certificate"}, {"name": "suite", "value": cert["verdict"]},
                   {"name": "package", "value": "Certificate"}, {"name": "severity", "value": "blocker"}],
        "attachments": [{"name": "certificate.md", "source": att, "type": "text/markdown"}],
    }
    (alluredir / f"{result['uuid']}-result.json").write_text(json.dumps(result, indent=1), encoding="utf-8")


def mark_non_strict(alluredir: Path) -> int:
    """pytest reports a SHOULD not met as an xfail, which allure-pytest writes as
    "skipped" with pytest's ``XFailed`` in its message and trace: rewritten as a result of its
    own, status unknown (not skipped, not passed: Allure's pie no longer reads 100 %), whose
    message is the case's, in the category "NON-STRICT: a SHOULD is not met". Returns how
    many were rewritten."""
    n = 0
    for path in alluredir.glob("*-result.json"):
        result = json.loads(path.read_text(encoding="utf-8"))
        labels = {x.get("name"): x.get("value") for x in result.get("labels", [])}
        if labels.get(OUTCOME_LABEL) != "NON-STRICT" or result.get("status") != "skipped":
            continue
        message = (result.get("statusDetails") or {}).get("message", "")
        # "XFAIL NON-STRICT: <detail>" then pytest's "_pytest.outcomes.XFailed: NON-STRICT: <detail>"
        detail = message.split("NON-STRICT: ", 1)[-1]
        detail = re.split(r"\s*_pytest\.outcomes\.XFailed:", detail, maxsplit=1)[0].strip()
        result["status"] = "unknown"
        result["statusDetails"] = {"message": f"{NON_STRICT_MESSAGE}: {detail}"}
        path.write_text(json.dumps(result), encoding="utf-8")
        n += 1
    return n


def write_allure_extras(alluredir: Path, doc: dict[str, Any]) -> None:
    alluredir.mkdir(parents=True, exist_ok=True)
    mark_non_strict(alluredir)
    cert = build_certificate(doc)
    _write_certificate_result(alluredir, cert, doc)
    t = doc["target"]
    props = {"verdict": verdict_line(cert), "run.id": doc.get("run_id") or "", "target": t["name"], "target.kind": t["kind"],
             "implementation": t["implementation"], "implementation.version": t["version"],
             "protocols": ",".join(t["protocols"]),
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
                "reportName": f"{cert['verdict']}: conformance of "
                              f"{implementation_text(t['implementation'], t['version'])} ({doc['suite']} suite)"}
    if prov.get("ci"):
        executor["buildUrl"] = prov["ci"]["url"]
    (alluredir / "executor.json").write_text(json.dumps(executor, indent=1), encoding="utf-8")


def _escape(v: str) -> str:
    return v.replace("\\", "\\\\").replace("\n", "\\n")
