"""Golden transcripts as cases of catalogue requirements: a requirement of
``schemas/requirements.json`` may list transcripts (``transcripts``, files of
``fixtures/golden/``, made by ``conformance golden``), each replayed client-side against the
target (``fakebroker.script.replay``) as one of its cases, beside its live case if it has one.

- builtin target: every transcript is replayed on a fresh in-process broker built with the
  transcript's own coordinator settings (and the target's mutant, if any), on a virtual clock;
- external target (bootstrap or launched): replayed in real time against it, after the
  topics the transcript names (header ``meta.topics``) are created there through
  CreateTopics; topic ids are bound to the target's own (``topic_id.<name>``). A
  transcript that needs virtual time, coordinator settings the target does not declare
  (session bounds; Kafka's defaults for the group size and offset metadata limits) or a
  longer initial rebalance delay than the target's, is NOT-APPLICABLE.

Each transcript is one case of its requirement, listed with its own outcome (PASS, FAIL,
BROKEN, NOT-APPLICABLE when skipped); the requirement's: any BROKEN -> BROKEN, else any FAIL
(every divergence, each with field, expected and actual) -> a ``Violation`` (FAIL for a
MUST), every transcript skipped -> NOT-APPLICABLE, else PASS.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..catalogue.requirements import Requirement
from .outcomes import Broken, NotApplicable, Violation
from .target import Target

# What ensure_topics sends: CreateTopics (fakebroker.realkafka.group_log.create_topic) and
# Metadata, for the topics' ids.
TOPIC_APIS = {"CreateTopics": 7, "Metadata": 12}
RULES_FILE = "rules.json"  # the generator's index of the folder: marks a golden folder
# The draft's connect group APIs: their transcripts carry the project's keys and codes.
_CONNECT_APIS = ("ConnectGroupHeartbeat", "ConnectGroupPrepareAssignment", "ConnectGroupInstallAssignment")
_SKIP = "NOT-APPLICABLE"  # a transcript the replay skipped (the case's outcome word)
# Settings of the transcript header that must match what an external target declares.
# The initial rebalance delay is checked apart (see external_mismatch).
_TIMING_OF = {"min_session_timeout_ms": "min_session_timeout_ms",
              "max_session_timeout_ms": "max_session_timeout_ms"}
# Settings no target file declares: an external coordinator is taken to run with Kafka's
# defaults (group.max.size, offset.metadata.max.bytes, the fixed 5 min for a new member).
KAFKA_FIXED = {"max_group_size": 2_147_483_647, "offset_metadata_max_bytes": 4096,
               "new_member_join_timeout_ms": 300_000}


class ReplayDiverged(Violation):
    """A replayed transcript diverged: the replay's report says where, field by field."""

    def __init__(self, report: str, expected: Any, actual: Any) -> None:
        Exception.__init__(self, report)
        self.what, self.expected, self.actual = report, expected, actual


def golden_dir() -> Path | None:
    """$CONFORMANCE_GOLDEN_DIR, else fixtures/golden of the checkout, else the copy an
    installed wheel ships (conformance/_golden); None when none is found (or there is no
    replay engine)."""
    if not replay_available():
        return None
    env = os.environ.get("CONFORMANCE_GOLDEN_DIR")
    here = Path(__file__).resolve().parents[1]  # the conformance package
    candidates = [Path(env)] if env else [here.parent / "fixtures" / "golden", here / "_golden"]
    return next((d for d in candidates if (d / RULES_FILE).is_file()), None)


def replay_available() -> bool:
    import importlib.util
    try:
        return importlib.util.find_spec("fakebroker.script.replay") is not None
    except ImportError:
        return False


def transcript_paths(req: Requirement) -> tuple[Path, ...]:
    """The requirement's golden transcripts as files ((): none, or no golden folder)."""
    d = golden_dir()
    return tuple(d / t for t in req.transcripts) if d is not None else ()


def numbering_mismatch(req: Requirement, target: Target) -> str | None:
    """Why transcripts of the draft's connect group type (a requirement of protocol
    ``connect``) cannot be replayed on ``target``: they carry the project's API keys and error
    codes; None when the target uses them too."""
    if "connect" not in req.protocols:
        return None
    from .target import DEFAULT_API_KEYS, DEFAULT_ERROR_CODES
    moved = sorted(k for k in _CONNECT_APIS if target.api_keys.get(k) != DEFAULT_API_KEYS[k])
    moved += sorted(k for k, v in DEFAULT_ERROR_CODES.items() if target.error_codes.get(k) != v)
    if moved:
        return ("the transcript uses the project's numbers (ERRATA, 'Numbers chosen'); "
                f"the target numbers {', '.join(moved)} otherwise")
    return None


def replay_transcripts(req: Requirement, target: Target, bootstrap: str | None,
                       cases: list[dict[str, str]] | None = None, *,
                       notes: list[str] | None = None, recording: Any = None) -> None:
    """Replay the requirement's transcripts, appending each one's outcome to ``cases``,
    its informational notes (unpinned fields that differ) to ``notes`` and what the target
    actually answered to ``recording`` (a Recorder: the case's transcript and pcap);
    returns when every one passed (or some were skipped); raises Violation / NotApplicable /
    Broken otherwise."""
    why = numbering_mismatch(req, target)
    if why:
        raise NotApplicable(why)
    paths = transcript_paths(req)
    if not paths:
        raise Broken(f"golden transcripts {', '.join(req.transcripts)} not found "
                     f"(no {RULES_FILE} folder; set CONFORMANCE_GOLDEN_DIR)")
    try:
        reports = asyncio.run(_replay_all(paths, target, bootstrap, req))
    except Exception as e:  # noqa: BLE001 - a harness fault is BROKEN
        raise Broken(f"replay could not run: {type(e).__name__}: {e}") from None
    from fakebroker.protocol import default_registry
    reg = default_registry()
    outcomes = [(p, r, _SKIP if r.status == "SKIP" else r.status) for p, r in reports]
    if recording is not None and bootstrap and target.builtin is None:
        host, _, port = bootstrap.rpartition(":")  # the transcript's header (once): the pcap's port
        recording.begin(host=host, port=int(port), node_id=None, clock="real")
    for p, r in reports:
        if notes is not None:
            notes += [f"{p.name}:{line.removeprefix('  note:')}" for line in r.note_lines()]
        if recording is not None and r.exchanged:
            recording.adopt(r.exchanged, lambda e, name=p.stem: f"{name}/{e.conn}")
    if cases is not None:
        cases += [{"case": p.name, "outcome": o, "detail": r.skipped if o == _SKIP else
                   (r.render(reg).splitlines()[0] if o != "PASS" else "")} for p, r, o in outcomes]
    for worst in ("BROKEN", "FAIL"):
        if any(o == worst for _, _, o in outcomes):
            path, rep = next((p, r) for p, r, o in outcomes if o == worst)
            message = f"{path.name}: {rep.render(reg)}"
            if worst == "BROKEN":
                raise Broken(message)
            f = getattr(rep, "failure", None)
            d = f.divergence if f is not None else None
            raise ReplayDiverged(message, d.expected if d else None, d.actual if d else None)
    if all(o == _SKIP for _, _, o in outcomes):
        raise NotApplicable("; ".join(f"{p.name}: {r.skipped}" for p, r, _ in outcomes))


async def _replay_all(paths: tuple[Path, ...], target: Target, bootstrap: str | None,
                      req: Requirement) -> list[tuple[Path, Any]]:
    from fakebroker.protocol import default_registry
    from fakebroker.script.replay import RealPacer, Report, precheck, replay, run_token
    from fakebroker.exchange.transcript import load
    reg = default_registry()
    out: list[tuple[Path, Any]] = []
    for path in paths:
        t = load(path, reg)
        head = t.header or {}
        if target.builtin is not None:
            out.append((path, await _replay_builtin(t, head, target, reg)))
            continue
        why = (external_mismatch(head, target, joined_session_timeouts(t))
               or precheck(t, real_time=True, max_step_s=30.0))
        if not why:
            assert bootstrap is not None
            fitted = await at_target_versions(t, bootstrap, req, reg, target.max_versions)
            why, t = (fitted, t) if isinstance(fitted, str) else (None, fitted)
        if why:
            out.append((path, Report(str(path), path.stem, skipped=why)))
            continue
        assert bootstrap is not None
        topics = (head.get("meta") or {}).get("topics") or {}
        ids = await ensure_topics(bootstrap, topics) if topics else {}
        from fakebroker.script.golden_broker import TOPIC_ID_PREFIX
        out.append((path, await replay(t, bootstrap, reg, pacer=RealPacer(), unique=run_token(),
                                       negotiate=True, timeout_s=answer_bound_s(t, target),
                                       bindings={f"{TOPIC_ID_PREFIX}{n}": str(i) for n, i in ids.items()})))
    return out


async def at_target_versions(t: Any, bootstrap: str, req: Requirement, reg: Any,
                             caps: dict[str, int]) -> Any:
    """The transcript re-encoded at versions the target supports (its ApiVersions, on a
    connection of its own), or why it cannot be replayed there: the versions, or the
    CreateTopics its topics need."""
    from fakebroker.negotiation import VersionUnavailable, probe
    from fakebroker.script.replay import at_versions
    ranges = await probe(bootstrap, reg, caps)
    topics = ((t.header or {}).get("meta") or {}).get("topics") or {}
    known = _TOPICS.get(bootstrap, {})
    if any(name not in known for name in topics):  # topics to create: CreateTopics and Metadata
        try:
            for api, v in TOPIC_APIS.items():
                ranges.pick(api, wanted=v, who=f"{req.id}'s golden (its topics)")
        except VersionUnavailable as e:
            return str(e)
    return at_versions(t, ranges, reg, req.version_needs, req.id)


def external_mismatch(head: dict[str, Any], target: Target,
                      session_timeouts: Iterable[int] | None = None) -> str | None:
    """Why a transcript's coordinator settings rule out replaying it on ``target``.
    ``session_timeouts``: those its JoinGroups ask for; given, the session bounds matter
    only where one of them is inside the recorded bounds and outside the target's, or the
    other way round (a broker with other bounds answers every other join alike)."""
    recorded = head.get("coordinator", {})
    declared = {**KAFKA_FIXED, **{k: getattr(target.timing, a) for k, a in _TIMING_OF.items()
                                  if target.timing.session_bounds}}  # no bounds: none to differ
    differ = [k for k, v in declared.items() if k in recorded and recorded[k] != v]
    if session_timeouts is not None:
        differ = [k for k in differ if k not in _TIMING_OF]
        if _bounds_decide(recorded, target, session_timeouts):
            differ += [k for k in _TIMING_OF if k in recorded]
            declared.update({k: getattr(target.timing, k) if target.timing.session_bounds
                             else "none (session_bounds = false)" for k in _TIMING_OF})
    # A longer initial delay than recorded only makes the first join phase answer later,
    # which the replay's elastic pacing absorbs (Kafka 4.2 at 3000 ms passes every golden
    # recorded at 0); a shorter one splits joins the recording put in one generation.
    delay = target.timing.initial_rebalance_delay_ms
    if recorded.get("initial_rebalance_delay_ms", 0) > delay:
        differ.append("initial_rebalance_delay_ms")
        declared["initial_rebalance_delay_ms"] = delay
    if not differ:
        return None
    return ("recorded with coordinator settings "
            + ", ".join(f"{k}={recorded[k]}" for k in differ)
            + " where the target runs with " + ", ".join(f"{k}={declared[k]}" for k in differ))


def _bounds_decide(recorded: dict[str, Any], target: Target, session_timeouts: Iterable[int]) -> bool:
    """Whether one of ``session_timeouts`` is within the recorded bounds and not within the
    target's, or the other way round."""
    def inside(s: int, lo: int | None, hi: int | None) -> bool:
        return (lo is None or s >= lo) and (hi is None or s <= hi)
    t = target.timing
    lo, hi = (t.min_session_timeout_ms, t.max_session_timeout_ms) if t.session_bounds else (None, None)
    rlo, rhi = recorded.get("min_session_timeout_ms"), recorded.get("max_session_timeout_ms")
    return any(inside(s, rlo, rhi) != inside(s, lo, hi) for s in session_timeouts)


def joined_session_timeouts(t: Any) -> list[int]:
    """The session timeouts a transcript's JoinGroup requests ask for."""
    return [e.body["SessionTimeoutMs"] for e in t.requests()
            if e.api == "JoinGroup" and e.body and "SessionTimeoutMs" in e.body]


def answer_bound_s(t: Any, target: Target) -> float:
    """How long a replay waits for an answer on ``target``: a join may be held for the
    longest rebalance timeout the transcript asks for (plus the target's initial delay), so
    an answer that comes within that is no failure; never less than the replay's default."""
    from fakebroker.script.replay import DEFAULT_TIMEOUT_S
    held = max((int(e.body.get("RebalanceTimeoutMs", 0)) for e in t.events
                if e.kind == "request" and e.api == "JoinGroup" and e.body), default=0)
    ms = held + target.timing.initial_rebalance_delay_ms
    return max(DEFAULT_TIMEOUT_S, ms * target.timing.wait_scale / 1000 + 5.0)


# Per process: bootstrap -> topic name -> id, once created (or found) on the target.
_TOPICS: dict[str, dict[str, Any]] = {}


async def ensure_topics(bootstrap: str, topics: dict[str, int]) -> dict[str, Any]:
    """The topics a transcript needs (name -> partitions), created on the target through
    CreateTopics unless they exist; their ids, for the transcript's topic_id bindings."""
    from fakebroker.client import KafkaConnection
    from fakebroker.protocol import default_registry
    from fakebroker.negotiation import negotiate
    from fakebroker.realkafka.group_log import create_topic, wait_for_leaders
    known = _TOPICS.setdefault(bootstrap, {})
    missing = {n: p for n, p in topics.items() if n not in known}
    if missing:
        reg = default_registry()
        mt = reg["MetadataRequest"]
        async with await KafkaConnection.open(bootstrap, client_id="conformance-golden") as conn:
            await negotiate(conn)  # as every suite connection (the versions: at_target_versions)
            for name, partitions in missing.items():
                await create_topic(conn, name, partitions=partitions)
                have = await wait_for_leaders(conn, name)
                if have != partitions:
                    raise RuntimeError(f"topic {name} exists on the target with {have} partitions; "
                                       f"the golden transcripts need {partitions}")
                md = (await conn.send(mt.new(
                    topics=[mt.cls.MetadataRequestTopic(topic_id=uuid.UUID(int=0), name=name)],  # type: ignore[attr-defined]
                    allow_auto_topic_creation=False, include_topic_authorized_operations=False),
                    TOPIC_APIS["Metadata"])).response
                known[name] = md.topics[0].topic_id
    return {n: known[n] for n in topics}


async def _replay_builtin(t: Any, head: dict[str, Any], target: Target, reg: Any) -> Any:
    from fakebroker.script.golden_broker import golden_broker
    from fakebroker.script.replay import VirtualPacer, replay, run_token
    broker = golden_broker(head.get("coordinator", {}), reg)
    if target.mutant is not None:
        from ..mutants import apply_mutant
        apply_mutant(broker, target.mutant)
    await broker.start()
    try:
        return await replay(t, broker.bootstrap, reg, pacer=VirtualPacer(broker), timeout_s=5,
                            unique=run_token())
    finally:
        await broker.stop()
