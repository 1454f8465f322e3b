"""A world of scripted members around one engine, for random histories: members join,
heartbeat, lose responses, release revoked units late, leave, go silent, send stale
epochs; the unit set changes; time jumps. ``World.check`` asserts the invariants after
every step, ``World.heal`` lets every member heartbeat honestly until the group is
stable."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fakebroker.coordinator.reconcile import (ConnectUnit, EngineConfig, GroupEngine, Heartbeat,
                                              HeartbeatResult, MemberState, MemberTarget,
                                              TopicPartition, compact, topic_catalog)
from fakebroker.coordinator.reconcile.connect import connect_policy
from fakebroker.testing.reconcile_sim import RESTART_ERRORS, round_robin_installer
from fakebroker.coordinator.reconcile.target import ServerAssigned

from .helpers import assignors

SESSION_MS = 10_000
REBALANCE_MS = 4_000


@dataclass
class Client:
    member_id: str
    subscription: frozenset[str]
    epoch: int = 0
    joined: bool = False
    owned: frozenset[Any] = frozenset()
    releasing: frozenset[Any] = frozenset()   # revoked, not yet released (slow clients)
    fast: bool = True
    lost_any: bool = False
    resend_full: bool = False  # the last response was lost: the next request is full
    active: bool = True        # wants to be in the group

    def request(self, epoch_shift: int = 0) -> Heartbeat[Any]:
        if not self.joined or self.epoch == 0:
            # Joining (epoch 0): every field is sent.
            return Heartbeat(member_id=self.member_id, member_epoch=0,
                             rebalance_timeout_ms=REBALANCE_MS, subscription=self.subscription,
                             client_assignors=assignors(), owned=frozenset())
        if self.resend_full:
            # After an error (e.g. a timed-out request) a member sends every field again.
            return Heartbeat(member_id=self.member_id, member_epoch=self.epoch + epoch_shift,
                             rebalance_timeout_ms=REBALANCE_MS, subscription=self.subscription,
                             client_assignors=assignors(), owned=self.owned)
        return Heartbeat(member_id=self.member_id, member_epoch=self.epoch + epoch_shift,
                         owned=self.owned)

    def apply(self, result: HeartbeatResult[Any]) -> None:
        self.resend_full = False
        if result.error in RESTART_ERRORS:
            self.abandon()
            return
        if result.error:
            return
        self.joined = True
        self.epoch = result.member_epoch
        if result.assignment is not None:
            new = result.assignment.units
            revoked = (self.owned - self.releasing) - new
            added = new - self.owned
            if not self.lost_any:
                assert not (revoked and added), (self.member_id, revoked, added)
            if self.fast:
                self.owned = (self.owned - revoked - self.releasing) | added
                self.releasing = frozenset()
            else:
                self.releasing |= revoked
                self.owned = self.owned | added

    def release(self) -> None:
        self.owned = self.owned - self.releasing
        self.releasing = frozenset()

    def abandon(self) -> None:
        self.owned = self.releasing = frozenset()
        self.epoch = 0
        self.joined = False


@dataclass
class World:
    flavor: str                      # "uniform", "range" or "connect"
    rejoin_at_zero: bool = True
    now: int = 0
    clients: dict[str, Client] = field(default_factory=dict)
    topics: dict[str, tuple[str, int]] = field(default_factory=lambda: {
        "a": ("Ta", 4), "b": ("Tb", 3)})
    connectors: dict[str, int] = field(default_factory=lambda: {"A": 2, "B": 1})
    last_group_epoch: int = 0
    last_assignment_epoch: int = 0
    member_epochs: dict[str, int] = field(default_factory=dict)
    errors: int = 0
    calls: int = 0
    seen: set[str] = field(default_factory=set)   # what the history exercised

    def __post_init__(self) -> None:
        if self.flavor == "connect":
            self.engine: GroupEngine[Any] = GroupEngine(
                EngineConfig.connect("g", session_timeout_ms=SESSION_MS,
                                     rejoin_at_zero=self.rejoin_at_zero), connect_policy())
        else:
            policy: ServerAssigned[TopicPartition] = ServerAssigned(
                resolver=lambda key: topic_catalog(self.topics).get(key, ()), default=self.flavor)
            self.engine = GroupEngine(EngineConfig("g", session_timeout_ms=SESSION_MS,
                                                   rejoin_at_zero=self.rejoin_at_zero), policy)

    # ------------------------------------------------------------------ helpers
    def connect_units(self) -> list[ConnectUnit]:
        out: list[ConnectUnit] = []
        for name, tasks in sorted(self.connectors.items()):
            out.append(ConnectUnit.instance(name))
            out.extend(ConnectUnit.of_task(name, t) for t in range(tasks))
        return out

    def client(self, index: int) -> Client:
        mid = f"m{index}"
        if mid not in self.clients:
            subs = frozenset({"a", "b"}) if index % 3 else frozenset({"a"})
            self.clients[mid] = Client(mid, subs, fast=index % 4 != 3)
        return self.clients[mid]

    def _state(self) -> tuple[Any, Any]:
        return self.engine.durable_state(), self.engine.timer_state()

    def _call_heartbeat(self, client: Client, hb: Heartbeat[Any]) -> HeartbeatResult[Any]:
        self.engine.advance(self.now)
        self.check()
        before_state = self._state()
        before = (self.engine.member(client.member_id).current
                  if self.engine.has_member(client.member_id) else None)
        result = self.engine.heartbeat(hb, self.now)
        self.calls += 1
        self._note(hb, before, result)
        if result.error:
            self.errors += 1
            assert self._state() == before_state, "an error response changed the state"
        elif result.assignment is not None and before is not None and not client.lost_any:
            # Relative to what the member reports owning (its assigned set if it does not
            # say): a response takes units away or hands new ones, never both.
            owned = hb.owned if hb.owned is not None else before.assigned
            gone = owned - result.assignment.units
            new = result.assignment.units - owned
            assert not (gone and new), "revoke and assign in one response"
        if result.compute_assignment:
            self._install(client.member_id)
        return result

    def _note(self, hb: Heartbeat[Any], before: Any, result: HeartbeatResult[Any]) -> None:
        if result.error:
            self.seen.add(f"error {result.error.name} ({result.rule})")
        elif before is not None and 0 < hb.member_epoch < before.member_epoch:
            self.seen.add("lost response: previous epoch accepted")
        elif before is not None and hb.member_epoch == 0:
            self.seen.add("known member rejoined at epoch 0")
        for ev in result.outcome.events:
            name = type(ev).__name__
            if name == "MemberRemoved":
                self.seen.add(f"removed: {ev.reason}")  # type: ignore[attr-defined]
            elif name == "MemberEpochChanged":
                self.seen.add(f"state {ev.to_state}")  # type: ignore[attr-defined]

    def _install(self, member_id: str) -> None:
        epoch = self.engine.member(member_id).current.member_epoch
        prepared = self.engine.prepare_assignment(member_id, epoch, self.now)
        assert prepared.error == 0, prepared
        targets = round_robin_installer(self.connect_units())(prepared)
        result = self.engine.install_assignment(member_id, epoch, prepared.group_epoch,
                                                targets, self.now)
        assert result.error == 0, result

    # ------------------------------------------------------------------ actions
    def beat(self, index: int, lose: bool = False, epoch_shift: int = 0) -> None:
        client = self.client(index)
        client.active = True
        result = self._call_heartbeat(client, client.request(epoch_shift))
        if lose:
            client.lost_any = True
            client.resend_full = True
        else:
            client.apply(result)

    def release(self, index: int) -> None:
        self.client(index).release()

    def leave(self, index: int) -> None:
        client = self.client(index)
        client.active = False
        if client.joined:
            self._call_heartbeat(client, Heartbeat(client.member_id, -1))
            client.abandon()

    def tick(self, ms: int) -> None:
        self.now += ms
        for ev in self.engine.advance(self.now).events:
            if type(ev).__name__ == "MemberRemoved":
                self.seen.add(f"removed: {ev.reason}")  # type: ignore[attr-defined]

    def change_units(self, seed: int) -> None:
        if self.flavor == "connect":
            name = "AB"[seed % 2]
            self.connectors[name] = (self.connectors[name] + 1 + seed) % 4
            self.engine.request_rebalance("connector config changed", self.now)
        else:
            name = "ab"[seed % 2]
            tid, count = self.topics[name]
            self.topics[name] = (tid, max(1, (count + 1 + seed) % 7))
            self.engine.refresh_units(self.now)

    def bump(self) -> None:
        self.engine.request_rebalance("operator", self.now)

    # ------------------------------------------------------------------ invariants
    def check(self) -> None:
        e = self.engine
        # Epochs never go backwards; member epoch <= assignment epoch <= group epoch.
        assert e.group_epoch >= self.last_group_epoch
        assert e.assignment_epoch >= self.last_assignment_epoch
        assert e.assignment_epoch <= e.group_epoch
        self.last_group_epoch, self.last_assignment_epoch = e.group_epoch, e.assignment_epoch
        for mid in list(self.member_epochs):
            if not e.has_member(mid):
                del self.member_epochs[mid]
        holders: dict[Any, str] = {}
        for mid in e.member_ids():
            current = e.member(mid).current
            assert current.member_epoch >= self.member_epochs.get(mid, 0), mid
            assert current.member_epoch <= e.assignment_epoch
            self.member_epochs[mid] = current.member_epoch
            assert not (current.assigned & current.pending_revocation)
            if current.pending_revocation:
                assert current.state is MemberState.UNREVOKED_PARTITIONS
            # No unit is held by two members, and the engine's index agrees.
            for unit in current.held:
                assert unit not in holders, f"{unit} held by {holders.get(unit)} and {mid}"
                holders[unit] = mid
                assert e.holder(unit) == mid
            # What a live client really owns, the engine attributes to it: so no unit is
            # ever owned by two live clients.
            client = self.clients.get(mid)
            if client is not None and client.joined:
                assert client.owned <= current.held, (mid, client.owned, current.held)

    def check_rebuild(self) -> None:
        store = self.engine.store
        log = store.log  # type: ignore[attr-defined]
        for records in (log, compact(log)):
            rebuilt: GroupEngine[Any] = GroupEngine.rebuild(records, self.engine.config,
                                                            self.engine.policy, self.now)
            assert rebuilt.durable_state() == self.engine.durable_state()

    def heal(self, max_rounds: int = 40) -> int:
        """Every member that wants to be in the group heartbeats honestly (releasing at
        once, no lost responses) every second; the group must converge."""
        for client in self.clients.values():
            client.fast = True
            client.release()
        for rounds in range(max_rounds):
            if rounds and self.is_converged():
                return rounds
            self.tick(1_000)
            for mid in sorted(self.clients):
                client = self.clients[mid]
                if client.active:
                    client.apply(self._call_heartbeat(client, client.request()))
                    self.check()
        raise AssertionError("the group did not converge")

    def is_converged(self) -> bool:
        e = self.engine
        wanted = {mid for mid, c in self.clients.items() if c.active}
        if not wanted and not e.member_ids():
            return True  # an empty group computes its next target when someone joins
        if set(e.member_ids()) != wanted or e.group_epoch != e.assignment_epoch:
            return False
        for mid in wanted:
            current, client = e.member(mid).current, self.clients[mid]
            if current.state is not MemberState.STABLE or current.member_epoch != e.group_epoch:
                return False
            if not (client.owned == current.assigned == e.target(mid).units):
                return False
            if client.epoch != current.member_epoch:
                return False
        if self.flavor == "connect" and wanted:
            union = frozenset(u for mid in wanted for u in e.target(mid).units)
            assert union == frozenset(self.connect_units())
        elif wanted:
            catalog = e.catalog
            assert frozenset(u for mid in wanted for u in e.target(mid).units) == \
                frozenset(u for us in catalog.values() for u in us)
        return True

    def targets(self) -> dict[str, MemberTarget[Any]]:
        return {mid: self.engine.target(mid) for mid in self.engine.member_ids()}
