"""Golden transcripts as cases: each rule of ``fixtures/golden/rules.json`` (the scripting
layer's golden catalogue of the classic group APIs and of the draft's connect group APIs,
``CONNECT-*``, which apply to targets claiming ``connect``) becomes one case, its rule id the test
id, replayed client-side against the target (``fakebroker.script.replay``).

- builtin target: every transcript is replayed on a fresh in-process broker built with the
  transcript's own coordinator settings (and the target's mutant, if any), on a virtual clock;
- external target (bootstrap or launched): replayed in real time against it, after the
  topics the transcript names (header ``meta.topics``) are created there through
  CreateTopics; topic ids are bound to the target's own (``topic_id.<name>``). A
  transcript that needs virtual time, coordinator settings the target does not declare
  (session bounds; Kafka's defaults for the group size and offset metadata limits) or a
  longer initial rebalance delay than the target's, is NOT-APPLICABLE.

A golden rule pins Kafka's classic coordinator behaviour, which DESIGN.md makes binding:
it counts as a MUST. Its outcome: replay PASS -> PASS, FAIL (every divergence, each with field,
expected and actual) -> FAIL, SKIP -> NOT-APPLICABLE, BROKEN -> BROKEN.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .harness.outcomes import CaseResult, Outcome
from .target import Target

RULES_FILE = "rules.json"
# The draft's connect group APIs (CONNECT-* rules); the transcripts carry the project's keys.
_CONNECT_APIS = ("ConnectGroupHeartbeat", "ConnectGroupPrepareAssignment", "ConnectGroupInstallAssignment")
# Settings of the transcript header that must match what an external target declares.
# The initial rebalance delay is checked apart (see external_mismatch).
_TIMING_OF = {"min_session_timeout_ms": "min_session_timeout_ms",
              "max_session_timeout_ms": "max_session_timeout_ms"}
# Settings no target file declares: an external coordinator is taken to run with Kafka's
# defaults (group.max.size, offset.metadata.max.bytes, the fixed 5 min for a new member).
KAFKA_FIXED = {"max_group_size": 2_147_483_647, "offset_metadata_max_bytes": 4096,
               "new_member_join_timeout_ms": 300_000}


@dataclass(frozen=True, repr=False)
class GoldenRule:
    id: str
    api: str
    title: str
    expect: str
    source: str
    transcripts: tuple[Path, ...]

    def __repr__(self) -> str:
        return self.id


def golden_dir() -> Path | None:
    """$CONFORMANCE_GOLDEN_DIR, else fixtures/golden of the checkout, else the copy an
    installed wheel ships (conformance/_golden)."""
    env = os.environ.get("CONFORMANCE_GOLDEN_DIR")
    here = Path(__file__).resolve().parent
    candidates = [Path(env)] if env else [here.parent / "fixtures" / "golden", here / "_golden"]
    return next((d for d in candidates if (d / RULES_FILE).is_file()), None)


def replay_available() -> bool:
    import importlib.util
    try:
        return importlib.util.find_spec("fakebroker.script.replay") is not None
    except ImportError:
        return False


def load_golden_rules(directory: Path | None = None) -> list[GoldenRule]:
    """The rules with their transcripts; empty when there is no golden catalogue (or no
    replay engine) yet."""
    d = directory or golden_dir()
    if d is None or not replay_available():
        return []
    doc = json.loads((d / RULES_FILE).read_text(encoding="utf-8"))
    return [GoldenRule(r["id"], r.get("api", ""), r.get("title", ""), r.get("expect", ""),
                       r.get("source", ""), tuple(d / t for t in r.get("transcripts", [])))
            for r in doc.get("rules", [])]


def applies(rule: GoldenRule, target: Target) -> str | None:
    """Why the rule does not apply (None when it does)."""
    if target.kind != "coordinator":
        return "golden transcripts script a coordinator; the target is a worker"
    if rule.id.startswith("CONNECT-"):
        if "connect" not in target.protocols:
            return "a golden transcript of the draft's connect group APIs; the target does not claim connect"
        from .target import DEFAULT_API_KEYS, DEFAULT_ERROR_CODES
        moved = sorted(k for k in _CONNECT_APIS if target.api_keys.get(k) != DEFAULT_API_KEYS[k])
        moved += sorted(k for k, v in DEFAULT_ERROR_CODES.items() if target.error_codes.get(k) != v)
        if moved:
            return ("the transcript uses the project's numbers (ERRATA, 'Numbers chosen'); "
                    f"the target numbers {', '.join(moved)} otherwise")
    elif "classic" not in target.protocols:
        return "golden transcripts cover the classic group APIs; the target does not claim classic"
    if not rule.transcripts:
        return "the rule lists no transcript"
    return None


def run_golden(rule: GoldenRule, target: Target, bootstrap: str | None) -> CaseResult:
    result = CaseResult(rule.id, "MUST", Outcome.PASS)
    why = applies(rule, target)
    if why:
        result.outcome, result.message = Outcome.NOT_APPLICABLE, why
        return result
    started = time.monotonic()
    try:
        reports = asyncio.run(_replay_all(rule, target, bootstrap))
    except Exception as e:  # noqa: BLE001 - a harness fault is BROKEN
        result.outcome, result.message = Outcome.BROKEN, f"replay could not run: {type(e).__name__}: {e}"
        return result
    result.duration_s = time.monotonic() - started
    from fakebroker.protocol import default_registry
    reg = default_registry()
    statuses = [r.status for _, r in reports]
    worst = next((s for s in ("BROKEN", "FAIL") if s in statuses), None)
    if worst is not None:
        path, rep = next((p, r) for p, r in reports if r.status == worst)
        result.outcome = Outcome.BROKEN if worst == "BROKEN" else Outcome.FAIL
        result.message = f"{path.name}: {rep.render(reg)}"
        f = getattr(rep, "failure", None)
        if f is not None and f.divergence is not None:
            result.expected, result.actual = f.divergence.expected, f.divergence.actual
    elif all(s == "SKIP" for s in statuses):
        result.outcome = Outcome.NOT_APPLICABLE
        result.message = "; ".join(f"{p.name}: {r.skipped}" for p, r in reports)
    else:
        result.notes = [f"{p.name}: {r.status}" for p, r in reports]
    return result


async def _replay_all(rule: GoldenRule, target: Target, bootstrap: str | None) -> list[tuple[Path, Any]]:
    from fakebroker.protocol import default_registry
    from fakebroker.script.replay import RealPacer, Report, precheck, replay, run_token
    from fakebroker.script.transcript import load
    reg = default_registry()
    out: list[tuple[Path, Any]] = []
    for path in rule.transcripts:
        t = load(path, reg)
        head = t.header or {}
        if target.builtin is not None:
            out.append((path, await _replay_builtin(t, head, target, reg)))
            continue
        why = external_mismatch(head, target) or precheck(t, real_time=True, max_step_s=30.0)
        if why:
            out.append((path, Report(str(path), path.stem, skipped=why)))
            continue
        assert bootstrap is not None
        topics = (head.get("meta") or {}).get("topics") or {}
        ids = await ensure_topics(bootstrap, topics) if topics else {}
        from fakebroker.script.golden.generate import TOPIC_ID_PREFIX
        out.append((path, await replay(t, bootstrap, reg, pacer=RealPacer(), unique=run_token(),
                                       bindings={f"{TOPIC_ID_PREFIX}{n}": str(i) for n, i in ids.items()})))
    return out


def external_mismatch(head: dict[str, Any], target: Target) -> str | None:
    """Why a transcript's coordinator settings rule out replaying it on ``target``."""
    recorded = head.get("coordinator", {})
    declared = {**KAFKA_FIXED, **{k: getattr(target.timing, a) for k, a in _TIMING_OF.items()}}
    differ = [k for k, v in declared.items() if k in recorded and recorded[k] != v]
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


# Per process: bootstrap -> topic name -> id, once created (or found) on the target.
_TOPICS: dict[str, dict[str, Any]] = {}


async def ensure_topics(bootstrap: str, topics: dict[str, int]) -> dict[str, Any]:
    """The topics a transcript needs (name -> partitions), created on the target through
    CreateTopics unless they exist; their ids, for the transcript's topic_id bindings."""
    from fakebroker.client import KafkaConnection
    from fakebroker.protocol import default_registry
    from fakebroker.realkafka.group_log import create_topic, wait_for_leaders
    known = _TOPICS.setdefault(bootstrap, {})
    missing = {n: p for n, p in topics.items() if n not in known}
    if missing:
        reg = default_registry()
        mt = reg["MetadataRequest"]
        async with await KafkaConnection.open(bootstrap, client_id="conformance-golden") as conn:
            for name, partitions in missing.items():
                await create_topic(conn, name, partitions=partitions)
                have = await wait_for_leaders(conn, name)
                if have != partitions:
                    raise RuntimeError(f"topic {name} exists on the target with {have} partitions; "
                                       f"the golden transcripts need {partitions}")
                md = (await conn.send(mt.new(
                    topics=[mt.cls.MetadataRequestTopic(topic_id=uuid.UUID(int=0), name=name)],  # type: ignore[attr-defined]
                    allow_auto_topic_creation=False, include_topic_authorized_operations=False), 12)).response
                known[name] = md.topics[0].topic_id
    return {n: known[n] for n in topics}


async def _replay_builtin(t: Any, head: dict[str, Any], target: Target, reg: Any) -> Any:
    from fakebroker.script.golden.generate import golden_broker
    from fakebroker.script.replay import VirtualPacer, replay, run_token
    broker = golden_broker(head.get("coordinator", {}), reg)
    if target.mutant is not None:
        from .mutants import apply_mutant
        apply_mutant(broker, target.mutant)
    await broker.start()
    try:
        return await replay(t, broker.bootstrap, reg, pacer=VirtualPacer(broker), timeout_s=5,
                            unique=run_token())
    finally:
        await broker.stop()
