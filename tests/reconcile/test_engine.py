"""The engine driven as a ConsumerGroupHeartbeat handler would drive it: joins,
revocations, withheld units, lost responses, fencing, leaves, timeouts, records and
rebuild. Flows follow Apache Kafka's GroupMetadataManager tests where one exists."""

from __future__ import annotations

import pytest

from fakebroker.coordinator.errors import InvariantBroken
from fakebroker.coordinator.reconcile import (GroupEngine, Heartbeat, MemberRemoved, MemberState,
                                              RemovalReason, compact, group_metadata_records)
from fakebroker.coordinator.reconcile.assignors import AssignorError
from fakebroker.coordinator.reconcile.records import (CompactedRecordStore, CurrentAssignmentRecord,
                                                      GroupMetadataRecord, MemberMetadataRecord,
                                                      TargetAssignmentMemberRecord,
                                                      TargetAssignmentMetadataRecord,
                                                      UnitSetMetadataRecord)
from fakebroker.coordinator.reconcile.units import EMPTY, frozen
from fakebroker.testing.reconcile_sim import Driver, SimMember
from fakebroker.protocol.error_codes import ErrorCode

from .helpers import consumer_engine, tp

S = MemberState
E = ErrorCode
FOO = frozenset({"foo"})


def join(mid: str, subs=FOO, timeout: int = 180_000, **kw) -> Heartbeat:
    return Heartbeat(member_id=mid, member_epoch=0, rebalance_timeout_ms=timeout,
                     subscription=subs, owned=frozenset(), **kw)


def hb(mid: str, epoch: int, owned=None, **kw) -> Heartbeat:
    return Heartbeat(member_id=mid, member_epoch=epoch, owned=owned, **kw)


def two_members(engine: GroupEngine) -> None:
    engine.heartbeat(join("m1", timeout=180_000), 0)
    engine.heartbeat(join("m2", timeout=90_000), 10)


def test_first_member_gets_everything_at_epoch_1() -> None:
    engine, _ = consumer_engine({"foo": ("F", 3)})
    r = engine.heartbeat(join("m1"), 0)
    assert (r.error, r.member_epoch, r.heartbeat_interval_ms) == (E.NONE, 1, 5_000)
    assert r.assignment.units == tp("F", 0, 1, 2)
    assert (engine.group_epoch, engine.assignment_epoch) == (1, 1)
    kinds = [type(x).__name__ for x in r.outcome.records]
    assert kinds == ["MemberMetadataRecord", "UnitSetMetadataRecord", "GroupMetadataRecord",
                     "TargetAssignmentMemberRecord", "TargetAssignmentMetadataRecord",
                     "CurrentAssignmentRecord"]


def test_rebalance_timeout_lifecycle() -> None:
    """Kafka's testRebalanceTimeoutLifecycle: m2 joins at epoch 2 with nothing (its unit is
    still m1's); m1 is asked to revoke (rebalance timeout armed), acknowledges (timeout
    cancelled, epoch 2, no Assignment since its set did not change)."""
    engine, _ = consumer_engine({"foo": ("F", 3)}, assignor="range")
    engine.heartbeat(join("m1"), 0)
    r = engine.heartbeat(join("m2", timeout=90_000), 5_000)
    assert (r.member_epoch, r.assignment.units) == (2, frozenset())
    assert engine.member("m2").current.state is S.UNRELEASED_PARTITIONS
    r = engine.heartbeat(hb("m1", 1, rebalance_timeout_ms=12_000), 10_000)
    assert (r.member_epoch, r.assignment.units) == (1, tp("F", 0, 1))
    assert engine.member("m1").current.state is S.UNREVOKED_PARTITIONS
    assert engine.deadline("rebalance", "m1") == 22_000
    r = engine.heartbeat(hb("m1", 1, owned=tp("F", 0, 1)), 15_000)
    assert (r.member_epoch, r.assignment) == (2, None)
    assert engine.deadline("rebalance", "m1") is None
    assert engine.advance(30_000).events == ()
    r = engine.heartbeat(hb("m2", 2, owned=frozenset()), 31_000)
    assert (r.member_epoch, r.assignment.units) == (2, tp("F", 2))


def test_rebalance_timeout_fences_a_member_that_does_not_revoke() -> None:
    engine, _ = consumer_engine({"foo": ("F", 2)})
    engine.heartbeat(join("m1", timeout=12_000), 0)
    engine.heartbeat(join("m2"), 1)
    engine.heartbeat(hb("m1", 1), 2)                     # asked to revoke at t=2
    assert engine.deadline("rebalance", "m1") == 12_002
    engine.heartbeat(hb("m1", 1, owned=tp("F", 0, 1)), 6_000)  # still owns: no ack
    out = engine.advance(12_001)
    assert out.events == () and engine.has_member("m1")
    out = engine.advance(12_002)
    assert [e for e in out.events if isinstance(e, MemberRemoved)] == \
        [MemberRemoved(engine.group_id, 12_002, "m1", None, RemovalReason.REBALANCE_TIMEOUT)]
    assert not engine.has_member("m1") and engine.holder(next(iter(tp("F", 0)))) is None
    r = engine.heartbeat(hb("m1", 1, owned=tp("F", 0)), 12_003)
    assert r.error == E.UNKNOWN_MEMBER_ID


def test_session_timeout_removes_and_heartbeats_extend() -> None:
    engine, _ = consumer_engine(session_timeout_ms=45_000)
    engine.heartbeat(join("m1"), 0)
    engine.heartbeat(hb("m1", 1), 40_000)
    assert engine.advance(84_999).events == ()
    # An error response does not extend the session.
    assert engine.heartbeat(hb("m1", 7), 84_999).error == E.FENCED_MEMBER_EPOCH
    out = engine.advance(85_000)
    assert MemberRemoved(engine.group_id, 85_000, "m1", None, RemovalReason.SESSION_TIMEOUT) in out.events
    assert engine.group_epoch == 2 and engine.member_ids() == ()


def test_timer_due_fires_before_the_request_at_the_same_instant() -> None:
    engine, _ = consumer_engine(session_timeout_ms=45_000)
    engine.heartbeat(join("m1"), 0)
    r = engine.heartbeat(hb("m1", 1), 45_000)
    assert r.error == E.UNKNOWN_MEMBER_ID
    assert any(isinstance(e, MemberRemoved) for e in r.outcome.events)


def test_member_epoch_validation() -> None:
    """Kafka's testConsumerGroupMemberEpochValidation: ahead or behind is fenced; the
    previous epoch with a subset of the assignment is the lost-response retry."""
    engine, _ = consumer_engine({"foo": ("F", 3)})
    engine.heartbeat(join("m1"), 0)
    engine.request_rebalance("test", 1)
    r = engine.heartbeat(hb("m1", 1, owned=tp("F", 0, 1, 2)), 2)   # moves to epoch 2
    assert r.member_epoch == 2 and engine.member("m1").current.previous_member_epoch == 1
    before = (engine.durable_state(), engine.timer_state())
    for epoch, owned in ((3, None), (0, None) if False else (1, None), (1, tp("F", 0, 7))):
        r = engine.heartbeat(hb("m1", epoch, owned=owned), 3)
        assert r.error == E.FENCED_MEMBER_EPOCH, (epoch, owned)
        assert (engine.durable_state(), engine.timer_state()) == before
    r = engine.heartbeat(hb("m1", 1, owned=tp("F", 0, 1)), 4)
    assert (r.error, r.member_epoch) == (E.NONE, 2)


def test_lost_join_response_is_retried_at_epoch_0() -> None:
    engine, _ = consumer_engine()
    engine.heartbeat(join("m1"), 0)
    r = engine.heartbeat(join("m1"), 1)
    assert (r.error, r.member_epoch, engine.group_epoch) == (E.NONE, 1, 1)
    assert r.assignment is not None


@pytest.mark.parametrize("rejoin_at_zero", [True, False])
def test_known_member_rejoining_at_epoch_0(rejoin_at_zero: bool) -> None:
    """KAFKA-19233: accepted (the member keeps its place and gets its set back); before
    that fix Kafka fenced it until its session expired."""
    engine, _ = consumer_engine({"foo": ("F", 2)}, rejoin_at_zero=rejoin_at_zero)
    engine.heartbeat(join("m1"), 0)
    engine.request_rebalance("test", 1)
    engine.heartbeat(hb("m1", 1, owned=tp("F", 0, 1)), 2)
    r = engine.heartbeat(join("m1"), 3)
    if rejoin_at_zero:
        assert (r.error, r.member_epoch, r.assignment.units) == (E.NONE, 2, tp("F", 0, 1))
        assert engine.group_epoch == 2
    else:
        assert r.error == E.FENCED_MEMBER_EPOCH


def test_unknown_member_and_full_group() -> None:
    engine, _ = consumer_engine(max_size=1)
    assert engine.heartbeat(hb("ghost", 3), 0).error == E.UNKNOWN_MEMBER_ID
    assert engine.leave("ghost", 0).error == E.UNKNOWN_MEMBER_ID
    assert engine.heartbeat(join("m1"), 0).error == E.NONE
    r = engine.heartbeat(join("m2"), 1)
    assert (r.error, r.rule) == (E.GROUP_MAX_SIZE_REACHED, "group-not-full")
    assert engine.member_ids() == ("m1",)


def test_leave_writes_tombstones_and_bumps() -> None:
    engine, _ = consumer_engine()
    two_members(engine)
    r = engine.leave("m2", 20)
    assert (r.error, r.member_epoch) == (E.NONE, -1)
    recs = r.outcome.records
    assert [type(x).__name__ for x in recs[:3]] == [
        "CurrentAssignmentRecord", "TargetAssignmentMemberRecord", "MemberMetadataRecord"]
    assert all(x.value is None for x in recs[:3])
    assert recs[-1] == GroupMetadataRecord("g", 3)
    assert engine.member_ids() == ("m1",) and engine.assignment_epoch == 2


def test_metadata_changes_that_bump_and_that_do_not() -> None:
    engine, _ = consumer_engine({"foo": ("F", 2), "bar": ("B", 2)})
    engine.heartbeat(join("m1"), 0)
    r = engine.heartbeat(hb("m1", 1, client_id="renamed"), 1)
    assert engine.group_epoch == 1
    assert [type(x).__name__ for x in r.outcome.records] == ["MemberMetadataRecord"]
    r = engine.heartbeat(hb("m1", 1, subscription=frozenset({"foo", "bar"})), 2)
    assert engine.group_epoch == 2 and r.member_epoch == 2
    assert r.assignment.units == tp("F", 0, 1) | tp("B", 0, 1)
    assert any(isinstance(x, UnitSetMetadataRecord) for x in r.outcome.records)


def test_unit_set_change_bumps_on_refresh() -> None:
    engine, catalog = consumer_engine({"foo": ("F", 2)})
    engine.heartbeat(join("m1"), 0)
    assert engine.refresh_units(1).records == ()
    catalog["foo"] = tuple(tp("F", 0, 1, 2))
    catalog["foo"] = tuple(sorted(catalog["foo"]))
    out = engine.refresh_units(2)
    assert engine.group_epoch == 2 and len(out.records) == 2
    r = engine.heartbeat(hb("m1", 1), 3)
    assert (r.member_epoch, r.assignment.units) == (2, tp("F", 0, 1, 2))


def test_most_requested_server_assignor_is_used() -> None:
    engine, _ = consumer_engine({"foo": ("F", 4)}, assignor="uniform")
    engine.heartbeat(join("m1", server_assignor="range"), 0)
    engine.heartbeat(join("m2", server_assignor="range"), 1)
    names = [e.source for e in engine.heartbeat(join("m3"), 2).outcome.events
             if type(e).__name__ == "TargetAssignmentChanged"]
    assert names == ["assignor:range"]


def test_assignor_failure_is_unknown_server_error_and_changes_nothing() -> None:
    engine, _ = consumer_engine()

    class Broken:
        name = "uniform"

        def assign(self, spec):
            raise AssignorError("boom")

    engine.heartbeat(join("m1"), 0)
    engine.policy.assignors["uniform"] = Broken()  # type: ignore[union-attr]
    before = (engine.durable_state(), engine.timer_state(), list(engine.store.log))
    r = engine.heartbeat(join("m2"), 1)
    assert (r.error, r.rule) == (E.UNKNOWN_SERVER_ERROR, "assignor-succeeds")
    assert (engine.durable_state(), engine.timer_state(), list(engine.store.log)) == before


def test_invalid_member_epochs() -> None:
    engine, _ = consumer_engine()
    assert engine.heartbeat(hb("m1", -2), 0).rule == "static-leave-unsupported"
    assert engine.heartbeat(hb("m1", -5), 0).error == E.INVALID_REQUEST


def test_static_members_are_found_by_instance_id_through_replacement_leave_and_rebuild() -> None:
    """The engine's instance id index follows the metadata records: a replacement moves
    the instance id to the new member id, a leave drops it, a rebuild restores it."""
    engine, _ = consumer_engine(static_membership=True)
    engine.heartbeat(join("a", instance_id="i-a"), 0)
    engine.heartbeat(join("b", instance_id="i-b"), 1)
    engine.heartbeat(join("c"), 2)
    assert (engine.static_member("i-a"), engine.static_member("i-b")) == ("a", "b")
    assert engine.heartbeat(hb("a", engine.member("a").current.member_epoch, instance_id="i-a"),
                            3).error == E.NONE
    assert engine.heartbeat(hb("a", -2, instance_id="i-a"), 4).error == E.NONE
    assert engine.static_member("i-a") == "a"  # still held: it left for now
    assert engine.heartbeat(join("a2", instance_id="i-a"), 5).error == E.NONE
    assert engine.static_member("i-a") == "a2"
    assert engine.heartbeat(hb("a", 1, instance_id="i-a"), 6).error == E.FENCED_INSTANCE_ID
    assert engine.heartbeat(hb("b", -1, instance_id="i-b"), 7).error == E.NONE
    assert engine.static_member("i-b") is None
    assert engine.heartbeat(hb("b", 1, instance_id="i-b"), 8).error == E.UNKNOWN_MEMBER_ID
    for records in (engine.store.log, compact(engine.store.log)):  # type: ignore[attr-defined]
        rebuilt = GroupEngine.rebuild(records, engine.config, engine.policy, now_ms=9)
        assert [rebuilt.static_member(i) for i in ("i-a", "i-b", "i-x")] == ["a2", None, None]


def test_time_never_goes_back() -> None:
    engine, _ = consumer_engine()
    engine.heartbeat(join("m1"), 100)
    with pytest.raises(ValueError):
        engine.heartbeat(hb("m1", 1), 99)


def _converged_group(n: int) -> GroupEngine:
    engine, _ = consumer_engine({"foo": ("F", 3 * n)})
    driver = Driver(engine)
    for i in range(n):
        driver.add(SimMember(f"m{i}", subscription=FOO))
    driver.converge()
    return engine


@pytest.mark.parametrize("n", [1, 3, 7])
def test_record_counts(n: int) -> None:
    """The draft: group metadata of X members is X + 2 records (X member metadata, one
    unit set, the group record last). With the target (X + 1) and the current
    assignments (X), a converged group compacts to 3X + 3 records."""
    engine = _converged_group(n)
    log = engine.store.log
    meta = group_metadata_records(log)
    assert len(meta) == n + 2
    assert isinstance(meta[-1], GroupMetadataRecord)
    assert sum(isinstance(r, MemberMetadataRecord) for r in meta) == n
    assert len(compact(log)) == 3 * n + 3
    kinds = {type(r) for r in compact(log)}
    assert kinds == {GroupMetadataRecord, UnitSetMetadataRecord, MemberMetadataRecord,
                     TargetAssignmentMemberRecord, TargetAssignmentMetadataRecord,
                     CurrentAssignmentRecord}


def test_compacted_store_keeps_what_compacting_the_log_keeps() -> None:
    """``CompactedRecordStore`` fed the log as it grows (joins, a leave's tombstones, the
    same member id back) holds ``compact(log)`` at every step, in the same order."""
    engine = _converged_group(3)
    log = engine.store.log  # type: ignore[attr-defined]
    kept = CompactedRecordStore()
    kept.append(log)
    assert kept.compacted() == compact(log)
    driver = Driver(engine, now_ms=1_000)
    for mid in ("m0", "m1", "m2"):
        driver.add(SimMember(mid, subscription=FOO, epoch=engine.group_epoch,
                             owned=engine.member(mid).current.assigned, joined=True))
    steps = [lambda: driver.add(SimMember("m3", subscription=FOO)),
             lambda: (engine.leave("m1", driver.now_ms), driver.members.pop("m1")),
             lambda: driver.add(SimMember("m1", subscription=FOO))]
    for step in steps:
        seen = len(log)
        step()
        driver.converge()
        kept.append(log[seen:])
        assert kept.compacted() == compact(log)
    assert any(r.key[2] == "m1" for r in kept.compacted())


def test_rebuild_restores_state_and_arms_timers() -> None:
    engine, _ = consumer_engine({"foo": ("F", 2)})
    engine.heartbeat(join("m1", timeout=30_000), 0)
    engine.heartbeat(join("m2"), 1)
    engine.heartbeat(hb("m1", 1), 2)          # m1 revoking
    for records in (engine.store.log, compact(engine.store.log)):
        rebuilt = GroupEngine.rebuild(records, engine.config, engine.policy, now_ms=1_000)
        assert rebuilt.durable_state() == engine.durable_state()
        assert rebuilt.deadline("session", "m2") == 1_000 + 45_000
        assert rebuilt.deadline("rebalance", "m1") == 1_000 + 30_000
        assert rebuilt.holder(next(iter(tp("F", 1)))) == "m1"


def test_replaying_a_unit_held_twice_is_caught() -> None:
    engine, _ = consumer_engine({"foo": ("F", 1)})
    engine.heartbeat(join("m1"), 0)
    rec = [r for r in engine.store.log if isinstance(r, CurrentAssignmentRecord)][-1]
    clash = CurrentAssignmentRecord("g", "m9", rec.value)
    with pytest.raises(InvariantBroken):
        GroupEngine.rebuild([*engine.store.log, clash], engine.config, engine.policy)


def test_a_new_target_writes_only_the_members_it_changes() -> None:
    """Seven members with 3 units each; m0 leaves: the uniform assignor keeps every other
    member's 3 units and deals m0's out: target records for the 3 members that gain one,
    the others' targets untouched."""
    engine = _converged_group(7)
    before = {m: engine.target(m) for m in engine.member_ids()}
    engine.leave("m0", 10_000)
    r = engine.heartbeat(hb("m1", engine.group_epoch - 1), 10_001)   # computes the target
    assert r.error == E.NONE and engine.assignment_epoch == engine.group_epoch
    grown = {m for m in before if m != "m0" and len(engine.target(m).units) == 4}
    assert grown == {"m1", "m2", "m3"}   # 21 units over 6 members: the first 3 get one more
    for m in sorted(set(before) - {"m0"} - grown):
        assert engine.target(m) is before[m]
    written = {rec.member_id for rec in r.outcome.records
               if isinstance(rec, TargetAssignmentMemberRecord)}
    assert written == grown


def test_held_units_and_empty_sets_are_not_copied() -> None:
    """The held set of a member with nothing pending is its assigned set itself, and an
    empty set read back from a record is the shared empty set (CPython makes, and its
    collector tracks, a new one each time)."""
    engine = _converged_group(3)
    current = engine.member("m1").current
    assert current.pending_revocation is EMPTY and current.held is current.assigned
    assert engine.member("m2").metadata.subscription == FOO
    assert frozen(()) is EMPTY and frozen(list(tp("F", 0))) == tp("F", 0)
