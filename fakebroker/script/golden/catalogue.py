"""The golden transcripts' cases and the scenarios that record them.

Each scenario is one case of a requirement of the catalogue (``schemas/requirements.json``):
its ID is that requirement's ID (``CLS-SYNC-01``, ``C848-HB-VAL-05``), with ``.N`` for the
Nth transcript of one requirement (``C848-HB-VAL-05.2``); the ID names its transcript
(``fixtures/golden/<ID>.jsonl``). A scenario may be a case of further requirements
(``also``). Never renumber: retire an ID and add a new one; ``schemas/id-renames.json``
maps the IDs of the former golden catalogue (``CLASSIC-*``, ``CONNECT-*``) onto these.
The title says what the transcript shows; the requirement's statement is the catalogue's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

SOURCES = {
    "kafka": "Apache Kafka's classic group coordinator (GroupMetadataManager, ClassicGroup)",
    "design": "the classic coordinator rules the catalogue pins (each requirement's source names the "
              "document that states it, or Apache Kafka's behaviour: docs/catalogue-audit.md)",
    "spec-002": "the classic JoinGroup / SyncGroup protocol (Kafka Client-side Assignment Proposal)",
    "kip-394": "KIP-394: member id required on the first JoinGroup (v4+)",
    "kip-345": "KIP-345: static membership (group.instance.id)",
    "kip-415": "KIP-415: Connect's incremental cooperative rebalancing",
    "kip-709": "KIP-709: batched OffsetFetch (v8+)",
    "kip-848": "KIP-848: topic ids in the offset APIs (v10)",
    "kip-1043": "KIP-1043: DescribeGroups v6 GROUP_ID_NOT_FOUND",
    "draft": "the KIP-848 draft for Kafka Connect: ConnectGroupHeartbeat / PrepareAssignment / "
             "InstallAssignment (Request Validation, Request Handling, error lists)",
    "errata": "schemas/ERRATA.md: the project's resolution of the connect draft's defects and gaps",
}

Scenario = Callable[[Any], Awaitable[None]]

# Kafka's broker defaults for the settings a golden header records: a replay names the
# ones a transcript was recorded with that differ, so a failure on another coordinator
# can be told from a difference of configuration.
KAFKA_DEFAULTS: dict[str, Any] = {
    "initial_rebalance_delay_ms": 3000, "min_session_timeout_ms": 6000,
    "max_session_timeout_ms": 1_800_000, "max_group_size": 2**31 - 1,
    "offset_metadata_max_bytes": 4096, "new_member_join_timeout_ms": 300_000,
}


@dataclass(frozen=True)
class Rule:
    id: str
    api: str
    title: str
    expect: str  # an error name, or NONE for a successful behaviour
    source: str
    settings: dict[str, Any] = field(default_factory=dict)  # coordinator settings it needs
    virtual_only: str | None = None  # why it cannot run on real time, or None
    also: tuple[str, ...] = ()
    fn: Scenario | None = None
    # API -> field paths the requirement pins that are unpinned by default (annotate.py)
    pins: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def requirements(self) -> list[str]:
        """The catalogue requirements this transcript is a case of: its own, then ``also``."""
        own = self.id.split(".")[0]
        return [own, *(r for r in self.also if r != own)]

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "transcript": f"{self.id}.jsonl", "requirements": self.requirements,
                "api": self.api, "title": self.title, "expect": self.expect,
                "source": self.source, "source_text": SOURCES[self.source],
                "settings": self.settings, "virtual_only": self.virtual_only,
                "pins": {api: list(paths) for api, paths in self.pins.items()}}


RULES: dict[str, Rule] = {}


def rule(id: str, api: str, expect: str, title: str, *, source: str = "kafka",
         settings: dict[str, Any] | None = None, virtual_only: str | None = None,
         also: tuple[str, ...] = (),
         pins: dict[str, tuple[str, ...]] | None = None) -> Callable[[Scenario], Scenario]:
    """Register a rule and the scenario that exercises it."""
    if source not in SOURCES:
        raise ValueError(f"{id}: unknown source {source!r}")

    def register(fn: Scenario) -> Scenario:
        if id in RULES:
            raise ValueError(f"rule {id} is defined twice")
        RULES[id] = Rule(id, api, title, expect, source, dict(settings or {}), virtual_only,
                         tuple(also), fn, dict(pins or {}))
        return fn
    return register
