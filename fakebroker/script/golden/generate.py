"""Generate the golden transcripts: run every scenario against a fresh fake broker on a
virtual clock, record, annotate, and write ``fixtures/golden/<RULE-ID>.jsonl`` plus
``rules.json``. Deterministic: the same code gives the same bytes (virtual time, wall time
derived from it, counting member-id suffixes), so a test regenerates and compares.

    fakebroker golden                 # rewrite fixtures/golden/
    fakebroker golden --check         # compare; exit 1 naming what drifted
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ...coordinator.config import CoordinatorConfig
from ...protocol import Registry
from ...server.broker import FakeBroker
from ...server.clock import VirtualClock
from ...server.config import BrokerConfig, Topic
from ..recorder import COORDINATOR_SETTINGS, Recorder, fixed_wall
from ..transcript import Transcript, dumps, new_header
from . import connect_scenarios, scenarios  # noqa: F401 - registers the rules
from .annotate import annotate
from .catalogue import RULES, SOURCES, Rule
from .session import ScenarioFailed, Session, golden_suffixes

EPOCH_S = 1_700_000_000.0
TOPICS = {"events": 3}
TOPIC_ID_PREFIX = "topic_id."
BASE_SETTINGS: dict[str, Any] = {"initial_rebalance_delay_ms": 0}
RULES_FILE = "rules.json"


def default_dir() -> Path:
    """``fixtures/golden`` of the source checkout."""
    return Path(__file__).resolve().parents[3] / "fixtures" / "golden"


def settings_of(rule: Rule) -> dict[str, Any]:
    cfg = CoordinatorConfig(**{**BASE_SETTINGS, **rule.settings})
    return {k: v for k, v in asdict(cfg).items() if k in COORDINATOR_SETTINGS}


def golden_broker(settings: dict[str, Any], registry: Registry, *,
                  member_id_suffix: Any = None) -> FakeBroker:
    """The broker goldens are recorded on (and replayed against in tests): the settings,
    the topic ``events`` (3 partitions) known to the offset APIs, a virtual clock."""
    extra = {"member_id_suffix": member_id_suffix} if member_id_suffix is not None else {}
    return FakeBroker(BrokerConfig(topics=[Topic(n, p) for n, p in TOPICS.items()]),
                      CoordinatorConfig(**settings, **extra), VirtualClock(), registry,
                      strict_topics=True)


async def run(rule: Rule, registry: Registry) -> Transcript:
    assert rule.fn is not None
    settings = settings_of(rule)
    broker = golden_broker(settings, registry, member_id_suffix=golden_suffixes())
    rec = broker.record(Recorder(wall=fixed_wall(EPOCH_S)))
    await broker.start()
    session = Session(broker, rec, rule.id, registry)
    try:
        await rule.fn(session)
        await session.close()
    except ScenarioFailed as e:
        raise ScenarioFailed(f"{rule.id}: {e}") from None
    finally:
        await broker.stop()
    events = list(rec.events)
    # Topic ids are the coordinator's: a replay binds them to the target's (topic_id.<name>).
    topic_ids = {f"{TOPIC_ID_PREFIX}{t.name}": str(t.topic_id) for t in broker.config.topics}
    annotate(events, {**session.groups, **topic_ids}, rule.pins)
    used = {n: v for n, v in topic_ids.items()
            if any(m.get("ref") == n for e in events for m in (e.match or {}).values())}
    header = new_header("golden", id=rule.id, title=rule.title, rules=rule.requirements,
                        clock="virtual", broker={"node_id": 1}, coordinator=settings,
                        virtual_only=rule.virtual_only, bindings={**session.groups, **used},
                        unique=sorted(session.groups),
                        meta={"topics": TOPICS, "generator": "fakebroker golden"})
    if rule.virtual_only is None:
        header["virtual_only"] = None
    return Transcript(header, events, f"{rule.id}.jsonl")


def rules_document() -> dict[str, Any]:
    return {"format": "fakebroker-golden-rules", "version": 1,
            "about": "The golden transcripts (fixtures/golden/<id>.jsonl), each a case of the "
                     "requirements of schemas/requirements.json it names: its id is its "
                     "requirement's (.N for a requirement's Nth transcript).",
            "sources": SOURCES,
            "rules": [r.to_json() for r in sorted(RULES.values(), key=lambda r: r.id)]}


def render_all(registry: Registry, only: list[str] | None = None) -> dict[str, str]:
    """File name -> content, for every rule (or those in ``only``)."""
    async def go() -> dict[str, str]:
        out: dict[str, str] = {}
        for rid in sorted(RULES):
            if only and rid not in only:
                continue
            t = await run(RULES[rid], registry)
            out[f"{rid}.jsonl"] = "".join(line + "\n" for line in t.lines())
        if not only:
            out[RULES_FILE] = json.dumps(rules_document(), indent=1) + "\n"
        return out
    return asyncio.run(go())


def write(directory: Path, files: dict[str, str]) -> list[str]:
    """Write the files; remove transcripts of rules that no longer exist. Returns removed."""
    directory.mkdir(parents=True, exist_ok=True)
    removed = []
    if RULES_FILE in files:  # a full run: what it did not produce is stale
        for old in directory.glob("*.jsonl"):
            if old.name not in files:
                old.unlink()
                removed.append(old.name)
    for name, text in files.items():
        (directory / name).write_text(text, encoding="utf-8")
    return removed


def drift(directory: Path, files: dict[str, str]) -> list[str]:
    """What differs between ``directory`` and freshly generated ``files``."""
    problems = []
    for name, text in sorted(files.items()):
        path = directory / name
        if not path.exists():
            problems.append(f"{name}: missing (run 'fakebroker golden' to write it)")
        elif path.read_text(encoding="utf-8") != text:
            old, new = path.read_text(encoding="utf-8").splitlines(), text.splitlines()
            line = next((i + 1 for i, (a, b) in enumerate(zip(old, new)) if a != b),
                        min(len(old), len(new)) + 1)
            problems.append(f"{name}: differs from a fresh run from line {line}")
    if RULES_FILE in files:
        for extra in sorted(p.name for p in directory.glob("*.jsonl") if p.name not in files):
            problems.append(f"{extra}: no rule produces it any more")
    return problems


__all__ = ["run", "render_all", "write", "drift", "rules_document", "golden_broker",
           "default_dir", "dumps"]
