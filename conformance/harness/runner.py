"""Run one requirement's case against a target and decide its outcome.

Applicability comes first (never a pass by default): an untestable entry, a target of the
other kind, unclaimed protocols or missing capabilities give NOT-APPLICABLE; an applicable
requirement without a case (a live case or golden transcripts) is BROKEN. Then the live case
runs under a hard timeout, then its golden transcripts are replayed (``conformance.harness.golden``);
the first end that is not a pass decides, and every case that ran is listed with its own
outcome (``CaseResult.cases``). Each end
maps to an outcome: return -> PASS; Violation -> FAIL (MUST), NON-STRICT (SHOULD) or
NOT-APPLICABLE (MAY: the optional behaviour is absent); NotApplicable -> NOT-APPLICABLE;
Broken, a timeout or any other exception -> BROKEN.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import traceback
from typing import Any, Protocol

from fakebroker.script.recorder import Recorder

from ..catalogue.requirements import Requirement
from .target import Target
from .cases import Case, loaded_cases
from .outcomes import Broken, CaseResult, NotApplicable, Outcome, Violation

LIVE = "live"  # the name of a requirement's live case among its cases (CaseResult.cases)


class Session(Protocol):
    """A started target: makes the context a case of its kind runs with."""

    target: Target

    def context(self, requirement: Requirement, recording: Recorder) -> Any: ...


def outside_claims(req: Requirement, target: Target) -> str | None:
    """Why the catalogue entry and the target file alone make ``req`` NOT-APPLICABLE (its
    kind, protocols, capabilities), or None. The expected outcomes of a calibration target
    (``conformance.reports.expected``) leave these unlisted."""
    if req.untestable:
        return f"not checkable from outside: {req.untestable}"
    if target.kind not in req.binds:
        return f"binds {' and '.join(req.binds)}s, the target is a {target.kind}"
    if not target.claims(req.protocols):
        return (f"the target claims none of {', '.join(req.protocols)} "
                f"(it claims {', '.join(sorted(target.protocols))})")
    missing = [n for n in req.needs if n not in target.capabilities]
    if missing:
        return f"needs capability {', '.join(missing)}, not claimed by the target"
    return None


def applicability(req: Requirement, target: Target, suite_case: Case | None) -> tuple[Outcome, str] | None:
    """None when the case should run; otherwise the outcome and the reason."""
    why = outside_claims(req, target)
    if why is not None:
        return Outcome.NOT_APPLICABLE, why
    if suite_case is None and not req.transcripts:
        return Outcome.BROKEN, "no case is implemented for this requirement yet"
    return None


def version_applicability(req: Requirement, session: Session) -> tuple[Outcome, str] | None:
    """NOT-APPLICABLE when the target supports no version of an API within the
    requirement's ``versions`` (as it advertised them to the session)."""
    ranges = getattr(session, "api_ranges", None)
    if ranges is None or not req.versions:
        return None
    from fakebroker.negotiation import gap
    why = gap(ranges, req.version_needs, req.id)
    return None if why is None else (Outcome.NOT_APPLICABLE, why)


def at_protocol(session: Session, protocol: str | None) -> Session:
    """The session whose target runs its workers at ``protocol`` (a per-protocol run):
    the context's ``target.connect_protocol`` is then the protocol under test, so every
    worker a case starts without naming a protocol starts at it."""
    if protocol is None or protocol == session.target.connect_protocol:
        return session
    assert dataclasses.is_dataclass(session), "a per-protocol run needs a dataclass session"
    return dataclasses.replace(session, target=dataclasses.replace(session.target, connect_protocol=protocol))  # type: ignore[type-var]


def run_case(req: Requirement, session: Session, protocol: str | None = None) -> CaseResult:
    """Run ``req``'s case; ``protocol``: the Connect sub-protocol of a per-protocol run."""
    session = at_protocol(session, protocol)
    target = session.target
    c = loaded_cases().get(req.id)
    result = CaseResult(req.id, req.level, Outcome.PASS, protocol=protocol)
    revive = getattr(session, "revive", None)  # a target's own broker that died since the last case
    restarted = revive() if revive is not None and applicability(req, target, c) is None else None
    skip = applicability(req, target, c) or version_applicability(req, session)
    if skip is not None:
        result.outcome, result.message = skip
        result.notes = [restarted] if restarted else []
        return result
    recording = Recorder(origin="record")
    started = time.monotonic()
    running = [LIVE] if c is not None else []  # the cases the outcome below is about
    try:
        if c is not None:
            asyncio.run(_run(c, req, session, recording, result))
            result.cases.append({"case": LIVE, "outcome": Outcome.PASS.value, "detail": ""})
        if req.transcripts:  # its golden transcripts, after the live case passed
            running = list(req.transcripts)
            _replay(req, session, result, recording, live=c is not None)
    except Violation as v:
        result.expected, result.actual = v.expected, v.actual
        if req.level == "MUST":
            result.outcome, result.message = Outcome.FAIL, str(v)
        elif req.level == "SHOULD":
            result.outcome, result.message = Outcome.NON_STRICT, str(v)
        else:
            result.outcome, result.message = Outcome.NOT_APPLICABLE, f"optional behaviour absent: {v}"
    except NotApplicable as e:
        result.outcome, result.message = Outcome.NOT_APPLICABLE, str(e)
    except Broken as e:
        result.outcome, result.message = Outcome.BROKEN, str(e)
    except (TimeoutError, asyncio.TimeoutError):
        result.outcome = Outcome.BROKEN
        result.message = f"the case did not finish within {c.timeout_s}s (harness bound)"
    except Exception as e:  # noqa: BLE001 - a harness fault is BROKEN, never a pass
        result.outcome = Outcome.BROKEN
        result.message = f"harness error: {type(e).__name__}: {e}\n{traceback.format_exc(limit=8)}"
    if restarted:
        result.notes.insert(0, restarted)
    listed = {x["case"] for x in result.cases}
    if result.outcome is not Outcome.PASS:  # the cases that ended without a verdict of their own
        detail = result.message.splitlines()[0] if result.message else ""
        result.cases += [{"case": n, "outcome": result.outcome.value, "detail": detail}
                         for n in running if n not in listed]
    result.duration_s = time.monotonic() - started
    result.transcript = recording.by_time()
    return result


def _replay(req: Requirement, session: Session, result: CaseResult, recording: Recorder, *,
            live: bool) -> None:
    """Replay the requirement's golden transcripts, listing each in the result's cases (its
    notes and the target's answers in its notes and transcript); beside a passed live
    case, transcripts that cannot be replayed on this target are listed NOT-APPLICABLE and
    leave the requirement's PASS alone."""
    from .golden import replay_transcripts
    cases = result.cases
    try:
        replay_transcripts(req, session.target, getattr(session, "bootstrap", None), cases,
                           notes=result.notes, recording=recording)
    except NotApplicable as e:
        if not live:
            raise
        listed = {x["case"] for x in cases}
        cases += [{"case": t, "outcome": Outcome.NOT_APPLICABLE.value, "detail": str(e)}
                  for t in req.transcripts if t not in listed]


async def _run(c: Case, req: Requirement, session: Session, recording: Recorder,
               result: CaseResult) -> None:
    ctx = session.context(req, recording)
    try:
        await asyncio.wait_for(c.fn(ctx), c.timeout_s)
    finally:
        close = getattr(ctx, "close", None)
        if close is not None:
            try:
                await asyncio.wait_for(close(), 30)
            except Exception:  # noqa: BLE001 - closing must not change the outcome
                pass
        result.notes = list(getattr(ctx, "notes", []))
        result.attachments = dict(getattr(ctx, "attachments", {}))
        result.invariants = dict(getattr(ctx, "invariants", {}))
