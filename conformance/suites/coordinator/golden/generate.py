"""Generate the golden transcripts: run every scenario against a fresh fake broker on a
virtual clock, record, annotate, and write ``fixtures/golden/<RULE-ID>.jsonl`` plus
``rules.json``. Deterministic: the same code gives the same bytes (virtual time, wall time
derived from it, counting member-id suffixes), so a test regenerates and compares.

    conformance golden                # rewrite fixtures/golden/
    conformance golden --check        # compare; exit 1 naming what drifted
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from fakebroker.coordinator.config import CoordinatorConfig
from fakebroker.protocol import Registry
from fakebroker.script.golden_broker import TOPIC_ID_PREFIX, TOPICS, golden_broker
from fakebroker.script.recorder import COORDINATOR_SETTINGS, Recorder, fixed_wall
from fakebroker.exchange.transcript import Transcript, new_header

from ....catalogue.requirements import default_catalogue
from . import (classic_groups_offsets, classic_join_sync, classic_liveness,  # noqa: F401
               classic_rebalances, draft)  # (each registers its scenarios)
from .annotate import annotate
from .registry import GOLDENS, NotInCatalogue, Golden
from .session import ScenarioFailed, Session, golden_suffixes

EPOCH_S = 1_700_000_000.0
BASE_SETTINGS: dict[str, Any] = {"initial_rebalance_delay_ms": 0}
from ....harness.golden import RULES_FILE


def default_dir() -> Path:
    """``fixtures/golden`` of the source checkout."""
    return Path(__file__).resolve().parents[4] / "fixtures" / "golden"


def settings_of(golden: Golden) -> dict[str, Any]:
    cfg = CoordinatorConfig(**{**BASE_SETTINGS, **golden.settings})
    return {k: v for k, v in asdict(cfg).items() if k in COORDINATOR_SETTINGS}


async def run(golden: Golden, registry: Registry) -> Transcript:
    assert golden.fn is not None
    settings = settings_of(golden)
    broker = golden_broker(settings, registry, member_id_suffix=golden_suffixes())
    rec = broker.record(Recorder(wall=fixed_wall(EPOCH_S)))
    await broker.start()
    session = Session(broker, rec, golden.id, registry)
    try:
        await golden.fn(session)
        await session.close()
    except ScenarioFailed as e:
        raise ScenarioFailed(f"{golden.id}: {e}") from None
    finally:
        await broker.stop()
    events = list(rec.events)
    # Topic ids are the coordinator's: a replay binds them to the target's (topic_id.<name>).
    topic_ids = {f"{TOPIC_ID_PREFIX}{t.name}": str(t.topic_id) for t in broker.config.topics}
    annotate(events, {**session.groups, **topic_ids}, golden.pins)
    used = {n: v for n, v in topic_ids.items()
            if any(m.get("ref") == n for e in events for m in (e.match or {}).values())}
    header = new_header("golden", id=golden.id, title=golden.title, rules=golden.requirements,
                        clock="virtual", broker={"node_id": 1}, coordinator=settings,
                        virtual_only=golden.virtual_only, bindings={**session.groups, **used},
                        unique=sorted(session.groups),
                        meta={"topics": TOPICS, "generator": "conformance golden"})
    if golden.virtual_only is None:
        header["virtual_only"] = None
    return Transcript(header, events, f"{golden.id}.jsonl")


def rules_document() -> dict[str, Any]:
    return {"format": "fakebroker-golden-rules", "version": 1,
            "about": "The golden transcripts (fixtures/golden/<id>.jsonl), each a case of the "
                     "requirements of schemas/requirements.json it names: its id is its "
                     "requirement's (.N for a requirement's Nth transcript).",
            "rules": [r.to_json() for r in sorted(GOLDENS.values(), key=lambda r: r.id)]}


def unrecorded() -> list[str]:
    """Transcripts the catalogue lists that no scenario records."""
    listed = {t.removesuffix(".jsonl") for r in default_catalogue() for t in r.transcripts}
    return sorted(listed - set(GOLDENS))


def render_all(registry: Registry, only: list[str] | None = None) -> dict[str, str]:
    """File name -> content, for every golden scenario (or those in ``only``). Raises NotInCatalogue
    when a scenario and the catalogue's transcripts disagree."""
    for r in GOLDENS.values():
        r.requirement  # noqa: B018 - raises NotInCatalogue
    if missing := unrecorded():
        raise NotInCatalogue(f"schemas/requirements.json lists transcripts no golden scenario "
                             f"records: {', '.join(missing)}")
    async def go() -> dict[str, str]:
        out: dict[str, str] = {}
        for rid in sorted(GOLDENS):
            if only and rid not in only:
                continue
            t = await run(GOLDENS[rid], registry)
            out[f"{rid}.jsonl"] = "".join(line + "\n" for line in t.lines())
        if not only:
            out[RULES_FILE] = json.dumps(rules_document(), indent=1) + "\n"
        return out
    return asyncio.run(go())


def write(directory: Path, files: dict[str, str]) -> list[str]:
    """Write the files; remove transcripts no scenario records any more. Returns removed."""
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
            problems.append(f"{name}: missing (run 'conformance golden' to write it)")
        elif path.read_text(encoding="utf-8") != text:
            old, new = path.read_text(encoding="utf-8").splitlines(), text.splitlines()
            line = next((i + 1 for i, (a, b) in enumerate(zip(old, new)) if a != b),
                        min(len(old), len(new)) + 1)
            problems.append(f"{name}: differs from a fresh run from line {line}")
    if RULES_FILE in files:
        for extra in sorted(p.name for p in directory.glob("*.jsonl") if p.name not in files):
            problems.append(f"{extra}: no golden scenario records it any more")
    return problems


__all__ = ["run", "render_all", "write", "drift", "rules_document", "default_dir"]
