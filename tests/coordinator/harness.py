"""A scripted client side for the sans-IO coordinator, on a virtual clock.

Every request is built with the codec and sent through the wire (encoded and decoded at
its version), and every reply is encoded at its request's version - the encoder is strict,
so a response built wrongly for a version fails here - and decoded back: tests look at
what a client would see.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, overload

from fakebroker.coordinator import (CoordinatorConfig, CoordinatorResult, GroupCoordinator, GroupEvent, Reply,
                                    RequestContext, counting_suffixes)
from fakebroker.coordinator.classic.group import ClassicGroup
from fakebroker.coordinator.topics import TopicCatalog
from fakebroker.protocol import Struct, default_registry
from fakebroker.protocol.error_codes import ErrorCode
from fakebroker.testing.requests import (describe_fields, heartbeat_fields, join_fields, leave_fields,
                                        list_groups_fields, sync_fields)

REG = default_registry()
EventT = TypeVar("EventT", bound=GroupEvent)
E = ErrorCode

PROTOCOL_TYPE = "connect"
DEFAULT_PROTOCOLS: tuple[tuple[str, bytes], ...] = (("sessioned", b"meta"),)
SESSION_MS = 10_000
AUTO: Any = object()  # sync(): take the group's current protocol type / name
REBALANCE_MS = 60_000


def make_config(**overrides: Any) -> CoordinatorConfig:
    overrides.setdefault("member_id_suffix", counting_suffixes())
    return CoordinatorConfig(**overrides)


@dataclass
class Sent:
    request_id: int
    api: str
    version: int


@dataclass
class Harness:
    config: CoordinatorConfig = field(default_factory=make_config)
    topics: TopicCatalog | None = None
    now: int = 0

    def __post_init__(self) -> None:
        self.coord = GroupCoordinator(REG, self.config, topics=self.topics)
        self._ids = itertools.count(1)
        self._sent: dict[int, Sent] = {}
        self.inbox: dict[int, Struct] = {}
        self.events: list[GroupEvent] = []
        self.records: list[Any] | None = None  # a list: every result's records, in order

    # ------------------------------------------------------------------ plumbing

    def send(self, api: str, version: int, *, client_id: str = "client", host: str = "127.0.0.1",
             **fields: Any) -> int:
        """Send ``<api>Request`` at ``version`` now; returns its request id."""
        mt = REG[f"{api}Request"]
        body = mt.decode(mt.encode(mt.new(**fields), version), version)
        rid = next(self._ids)
        self._sent[rid] = Sent(rid, api, version)
        ctx = RequestContext(rid, mt.api_key, version, client_id, host)  # type: ignore[arg-type]
        self._collect(self.coord.handle(ctx, body, self.now), rid)
        return rid

    def _collect(self, result: CoordinatorResult, rid: int | None = None) -> None:
        """Take in an input's result: ``rid`` is the request it handled, if any."""
        assert (result.reply is None) or rid is not None, "a tick answered as if for a request"
        own = [Reply(rid, result.reply)] if rid is not None and result.reply is not None else []
        assert result.next_deadline == self.coord.next_deadline()
        for r in [*own, *result.replies]:
            sent = self._sent[r.request_id]
            assert r.request_id not in self.inbox, f"request {r.request_id} answered twice"
            mt = REG[f"{sent.api}Response"]
            assert type(r.body) is mt.cls, f"{sent.api} answered with {type(r.body).__name__}"
            data = mt.encode(r.body, sent.version)  # strict: raises if wrong for the version
            self.inbox[r.request_id] = mt.decode(data, sent.version)
        self.events.extend(result.events)
        if self.records is not None:
            self.records.extend(result.records)
        self._check_join_counts()

    def _check_join_counts(self) -> None:
        """Every classic group's count of parked joins (kept incrementally, so a join costs
        O(1)) equals a recount of its members, after every input of every test."""
        for group in self.coord.groups.values():
            if isinstance(group, ClassicGroup):
                parked = sum(1 for m in group.members.values() if m.is_awaiting_join)
                assert group.num_awaiting_join() == parked, (
                    f"group {group.group_id}: {group.num_awaiting_join()} counted, {parked} parked")

    def advance(self, ms: int) -> None:
        self.at(self.now + ms)

    def at(self, t: int) -> None:
        self.now = t
        self._collect(self.coord.tick(t))

    def run_until(self, done: Callable[[], bool], limit_ms: int = 3_600_000) -> None:
        """Jump from deadline to deadline until ``done()``."""
        start = self.now
        while not done():
            deadline = self.coord.next_deadline()
            assert deadline is not None and deadline - start <= limit_ms, "nothing left to wait for"
            self.at(max(deadline, self.now))

    def mark_dead(self, group_id: str = "g") -> None:
        self._collect(self.coord.mark_dead(group_id, self.now))

    def answered(self, rid: int) -> bool:
        return rid in self.inbox

    def reply(self, rid: int) -> Any:
        assert rid in self.inbox, f"request {rid} ({self._sent[rid].api}) is still parked"
        return self.inbox[rid]

    def error(self, rid: int) -> ErrorCode:
        return ErrorCode(self.reply(rid).error_code)

    def group(self, group_id: str = "g") -> Any:
        return self.coord.groups[group_id]

    def state(self, group_id: str = "g") -> str:
        return self.group(group_id).state_name

    @overload
    def take_events(self) -> list[GroupEvent]: ...

    @overload
    def take_events(self, kind: type[EventT]) -> list[EventT]: ...

    def take_events(self, kind: type[Any] = GroupEvent) -> list[Any]:
        """Remove and return the events seen so far (only those of ``kind`` if given)."""
        taken = [e for e in self.events if isinstance(e, kind)]
        self.events = [e for e in self.events if not isinstance(e, kind)]
        return taken

    # ------------------------------------------------------------------ API helpers

    def join(self, member_id: str = "", *, group: str = "g", version: int = 9,
             client_id: str = "client", instance: str | None = None,
             protocols: tuple[tuple[str, bytes], ...] = DEFAULT_PROTOCOLS,
             protocol_type: str = PROTOCOL_TYPE, session: int = SESSION_MS,
             rebalance: int = REBALANCE_MS, reason: str | None = None) -> int:
        return self.send("JoinGroup", version, client_id=client_id, **join_fields(
            REG, group, member_id, version, session=session, rebalance=rebalance,
            protocols=protocols, protocol_type=protocol_type, instance=instance, reason=reason))

    def new_member(self, client_id: str = "client", **kw: Any) -> tuple[str, int]:
        """The v4+ dance: join without an id (MEMBER_ID_REQUIRED), rejoin with the id given.
        Returns (member id, request id of the parked rejoin)."""
        first = self.join(client_id=client_id, **kw)
        assert self.error(first) is E.MEMBER_ID_REQUIRED, self.reply(first)
        member_id = self.reply(first).member_id
        return member_id, self.join(member_id, client_id=client_id, **kw)

    def sync(self, member_id: str, generation: int, *, group: str = "g", version: int = 5,
             assignments: dict[str, bytes] | None = None, instance: str | None = None,
             protocol_type: str | None = AUTO, protocol_name: str | None = AUTO) -> int:
        if version >= 5:
            g = self.coord.classic_group(group)
            protocol_type = ((g and g.protocol_type) or PROTOCOL_TYPE) \
                if protocol_type is AUTO else protocol_type
            protocol_name = ((g and g.protocol_name) or "sessioned") \
                if protocol_name is AUTO else protocol_name
        return self.send("SyncGroup", version, **sync_fields(
            REG, group, member_id, generation, version, assignments=assignments, instance=instance,
            protocol_type=protocol_type, protocol_name=protocol_name))

    def heartbeat(self, member_id: str, generation: int, *, group: str = "g", version: int = 4,
                  instance: str | None = None) -> int:
        return self.send("Heartbeat", version,
                         **heartbeat_fields(group, member_id, generation, version, instance))

    def leave(self, *members: tuple[str, str | None] | str, group: str = "g",
              version: int = 5, reason: str | None = None) -> int:
        return self.send("LeaveGroup", version, **leave_fields(REG, group, members, version, reason))

    def describe(self, *groups: str, version: int = 6, ops: bool = False) -> Any:
        return self.reply(self.send("DescribeGroups", version, **describe_fields(groups, version, ops)))

    def list_groups(self, *, version: int = 5, states: list[str] | None = None,
                    types: list[str] | None = None) -> Any:
        return self.reply(self.send("ListGroups", version, **list_groups_fields(version, states, types)))

    # ------------------------------------------------------------------ scenarios

    def stable_group(self, n: int, *, group: str = "g", version: int = 9,
                     assignments: dict[int, bytes] | None = None,
                     **kw: Any) -> tuple[list[str], int]:
        """n dynamic members (client ids c1..cn) through join, the initial delay and sync.
        Returns (member ids in join order, generation)."""
        ids, rids = [], []
        for i in range(1, n + 1):
            mid, rid = self.new_member(f"c{i}", group=group, version=version, **kw)
            ids.append(mid)
            rids.append(rid)
        self.run_until(lambda: all(self.answered(r) for r in rids))
        gen = self.reply(rids[0]).generation_id
        leader = self.reply(rids[0]).leader
        given = {mid: (assignments or {}).get(i, f"a{i + 1}".encode()) for i, mid in enumerate(ids)}
        sync_ids = [self.sync(leader, gen, group=group, assignments=given)]
        sync_ids += [self.sync(m, gen, group=group) for m in ids if m != leader]
        for s in sync_ids:
            assert self.error(s) is E.NONE
        assert self.state(group) == "Stable"
        return ids, gen
