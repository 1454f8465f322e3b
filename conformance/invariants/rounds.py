"""One group's exchanges in wire order, and what the invariants derive from them: the rounds
of a classic group and who owned which unit after each. Pure Python, no Spark and no pandas:
the Spark audit (``conformance.pipeline.audit``) and the worker suite's always-on checks
(``conformance.harness.worker``) read the same rows with the same code."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Ex:
    """One exchange, as the checks read it (a row of the exchanges table)."""

    row: dict[str, Any]

    def __getattr__(self, name: str) -> Any:
        return self.row.get(name)

    @property
    def at(self) -> int:
        """Where it happened in the source: the response's line/frame, else the request's."""
        return self.resp_ref if self.resp_ref is not None else self.ref

    @property
    def req_ms(self) -> float | None:
        return _ms(self.req_vtime_ms, self.req_time)

    @property
    def resp_ms(self) -> float | None:
        return _ms(self.resp_vtime_ms, self.resp_time)

    @property
    def virtual(self) -> bool:
        return self.req_vtime_ms is not None

    def units(self, name: str) -> set[str]:
        return set(self.row.get(name) or ())


def _ms(vtime: int | None, wall: float | None) -> float | None:
    return float(vtime) if vtime is not None else (wall * 1000.0 if wall is not None else None)


def in_wire_order(rows: Iterable[dict[str, Any]]) -> list[Ex]:
    """Rows (clean Python values) in wire order: by the line/frame of the answer, then of the request."""
    out = [Ex(dict(r)) for r in rows]
    out.sort(key=lambda e: (e.at, e.ref))
    return out


@dataclass
class Sync:
    ex: Ex
    member: str
    incremental: bool
    assigned: set[str]
    revoked: set[str]
    delay_ms: int


@dataclass
class Round:
    """A generation of a classic group: who joined it and what each got."""

    generation: int
    members: set[str] = field(default_factory=set)
    leader: str | None = None
    protocol: str | None = None
    first_join_ms: float | None = None
    last_sync_ms: float | None = None
    joins: list[Ex] = field(default_factory=list)
    syncs: dict[str, Sync] = field(default_factory=dict)
    plan_ex: Ex | None = None  # the leader's SyncGroup, whose request carries every member's assignment
    before: dict[str, set[str]] = field(default_factory=dict)  # member -> owned entering the round
    after: dict[str, set[str]] = field(default_factory=dict)  # member -> owned after its sync

    @property
    def incremental(self) -> bool:
        return any(s.incremental for s in self.syncs.values())


def rounds(exs: list[Ex]) -> list[Round]:
    """Rounds of the group in generation order, with ownership carried from round to round
    (v0 assignments are complete; v1/v2 list new work, and revocations remove work)."""
    by_gen: dict[int, Round] = {}
    for e in exs:
        if e.api == "JoinGroup" and e.error_code == 0 and e.resp_generation is not None:
            r = by_gen.setdefault(e.resp_generation, Round(e.resp_generation))
            r.members.add(e.resp_member_id)
            r.leader, r.protocol = e.leader or r.leader, e.protocol_name or r.protocol
            r.joins.append(e)
            if e.req_ms is not None:
                r.first_join_ms = e.req_ms if r.first_join_ms is None else min(r.first_join_ms, e.req_ms)
        elif e.api == "SyncGroup" and e.error_code == 0 and e.generation is not None \
                and e.assignment_version is not None:
            r = by_gen.setdefault(e.generation, Round(e.generation))
            r.syncs[e.member_id] = Sync(e, e.member_id, e.assignment_version >= 1, e.units("assigned"),
                                        e.units("revoked"), e.scheduled_delay_ms or 0)
            if e.plan:
                r.plan_ex = e
            if e.resp_ms is not None:
                r.last_sync_ms = e.resp_ms if r.last_sync_ms is None else max(r.last_sync_ms, e.resp_ms)
    owned: dict[str, set[str]] = {}
    ordered = [by_gen[g] for g in sorted(by_gen)]
    for r in ordered:
        _planned_syncs(r)
        # A member that is not in the round left the group; its work is lost.
        owned = {m: u for m, u in owned.items() if m in r.members or not r.members}
        # What a member reports owning as it joins (v1/v2 metadata) is what the leader goes
        # by, and the truth when it missed an assignment the plan gave it.
        for j in r.joins:
            if (j.meta_version or 0) >= 1 and j.resp_member_id:
                owned[j.resp_member_id] = set(j.owned or ())
        r.before = {m: set(u) for m, u in owned.items()}
        for m, s in r.syncs.items():
            owned[m] = (owned.get(m, set()) - s.revoked) | s.assigned if s.incremental else set(s.assigned)
        r.after = {m: set(u) for m, u in owned.items()}
    return ordered


def _planned_syncs(r: Round) -> None:
    """A member of the round that never synced it (a scripted peer the case left idle, a
    member that missed its answer) got what the leader's plan gave it: its Sync is read from
    the plan, so its revocations are not lost and its work is not counted twice."""
    lead = r.plan_ex
    if lead is None or lead.member_id not in r.syncs:
        return
    incremental = r.syncs[lead.member_id].incremental
    for p in lead.plan:
        m = p.get("member")
        if m and m in r.members and m not in r.syncs:
            r.syncs[m] = Sync(lead, m, incremental, set(p.get("assigned") or ()), set(p.get("revoked") or ()),
                              r.syncs[lead.member_id].delay_ms)


@dataclass
class Group:
    """One group's exchanges in wire order; its rounds derived once for every check."""

    exs: list[Ex]
    # The members judged (the worker suite: its workers under test, not the scripted peers a
    # case makes lead or send what it likes); None: every member (the audit).
    leaders: frozenset[str] | None = None

    @property
    def judged_rounds(self) -> list[Round]:
        """The rounds whose assignment is judged here, in order."""
        return [r for r in self.rounds if self.judged(r)]

    def judged(self, r: Round) -> bool:
        """Whether the assignment of round ``r`` is its leader's to answer for here."""
        return self.judges_member(r.leader)

    def judges_member(self, member: str | None) -> bool:
        """Whether what ``member`` sends is judged here (a worker under test's, or anyone's)."""
        return self.leaders is None or member in self.leaders

    @functools.cached_property
    def rounds(self) -> list[Round]:
        return rounds(self.exs)


FENCED = {25, 110}  # UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH: the member starts over


def live_heartbeats(g: Group, state: dict[str, Any]) -> Iterator[Ex]:
    """The draft's heartbeats of members still in the group; a member that left (epoch -1)
    or was fenced is dropped from ``state`` (what a check keeps per member)."""
    for e in g.exs:
        if e.api != "ConnectGroupHeartbeat" or not e.member_id:
            continue
        if (e.member_epoch is not None and e.member_epoch < 0) or e.error_code in FENCED:
            state.pop(e.member_id, None)
            continue
        yield e


def violation(invariant: str, e: Ex, detail: str, *, generation: int | None = None,
              members: Iterable[str | None] = (), unit: str | None = None,
              requirement: str | None = None) -> dict[str, Any]:
    """A violation row; ``requirement``: the catalogue id it breaks, when the rule's one
    id (its module's ``REQUIREMENT``) depends on the exchange."""
    return {"invariant": invariant, "requirement": requirement, "source": e.source, "source_kind": e.source_kind,
            "ref": e.at, "ref_kind": "frame" if e.source_kind == "pcap" else "line",
            "group_id": e.group_id, "generation": generation,
            "members": sorted(m for m in members if m), "unit": unit, "detail": detail}
