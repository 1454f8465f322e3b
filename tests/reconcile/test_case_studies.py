"""The draft's case studies (Case Studies section) as executable scenarios, with the
project's corrections (ERRATA 39-46). The config topic holds AC0, AT1, AT2, BC0, BT1;
workers use one client-side assignor with versions 0-2."""

from __future__ import annotations

from fakebroker.coordinator.reconcile import Heartbeat, MemberState
from fakebroker.protocol.error_codes import ErrorCode

from .helpers import (ALL, REBALANCE_MS, SESSION_MS, assignors, connect_engine, current,
                      stable_connect_group, targets, units)

S = MemberState


def join(mid: str, low: int = 0, high: int = 2) -> Heartbeat:
    return Heartbeat(member_id=mid, member_epoch=0, rebalance_timeout_ms=REBALANCE_MS,
                     client_assignors=assignors(low, high), owned=frozenset())


def beat(engine, mid: str, now: int, owned=None, **kw):
    epoch = current(engine, mid).member_epoch
    return engine.heartbeat(Heartbeat(member_id=mid, member_epoch=epoch, owned=owned, **kw), now)


def test_empty_group() -> None:
    engine = connect_engine()
    assert (engine.group_epoch, engine.assignment_epoch, engine.member_ids()) == (0, 0, ())


def test_w1_then_w2_join() -> None:
    engine = connect_engine()
    # W1 joins: group epoch 1, an empty current assignment at epoch 0 (target still 0);
    # W1 is the only member, so it is selected to compute (COMPUTE_ASSIGNMENT).
    r = engine.heartbeat(join("W1"), 0)
    assert (r.error, r.member_epoch, r.compute_assignment) == (ErrorCode.NONE, 0, True)
    assert r.assignment is not None and r.assignment.units == frozenset()
    assert (engine.group_epoch, engine.assignment_epoch) == (1, 0)
    prepared = engine.prepare_assignment("W1", 0, 1)
    assert prepared.error == ErrorCode.NONE and prepared.group_epoch == 1
    assert [m.member_id for m in prepared.members] == ["W1"]
    assert engine.install_assignment("W1", 0, 1, targets(W1=units(*ALL)), 2).error == 0
    assert engine.assignment_epoch == 1
    # W1 heartbeats: nothing to revoke, it moves to epoch 1 with everything.
    r = beat(engine, "W1", 3, owned=frozenset())
    assert (r.member_epoch, r.assignment.units, r.compute_assignment) == (1, units(*ALL), False)
    assert current(engine, "W1").state is S.STABLE

    # W2 joins: group epoch 2. Its join heartbeat reconciles it to the current target
    # (epoch 1, where it has nothing).
    r = engine.heartbeat(join("W2"), 10)
    assert (r.member_epoch, r.assignment.units, r.compute_assignment) == (1, frozenset(), False)
    assert (engine.group_epoch, engine.assignment_epoch) == (2, 1)
    # W1 is (still) selected and installs the epoch-2 target.
    r = beat(engine, "W1", 11, owned=units(*ALL))
    assert r.compute_assignment and r.member_epoch == 1
    new = targets(W1=units("AC0", "AT1", "AT2"), W2=units("BC0", "BT1"))
    assert engine.install_assignment("W1", 1, 2, new, 12).error == 0
    # W1's next heartbeat asks it to revoke BC0, BT1; it stays at epoch 1.
    r = beat(engine, "W1", 13, owned=units(*ALL))
    assert (r.member_epoch, r.assignment.units) == (1, units("AC0", "AT1", "AT2"))
    assert current(engine, "W1").state is S.UNREVOKED_PARTITIONS
    # W1 acknowledges: epoch 2.
    r = beat(engine, "W1", 14, owned=units("AC0", "AT1", "AT2"))
    assert r.member_epoch == 2 and current(engine, "W1").state is S.STABLE
    # W2 heartbeats: BC0 and BT1 are free, it gets them at epoch 2.
    r = beat(engine, "W2", 15, owned=frozenset())
    assert (r.member_epoch, r.assignment.units) == (2, units("BC0", "BT1"))
    assert current(engine, "W2").state is S.STABLE
    assert engine.group_epoch == engine.assignment_epoch == 2


def test_w2_waits_for_w1_to_release() -> None:
    """ERRATA 40: W2 heartbeating before W1 has revoked moves to epoch 2 with an empty
    set (BC0, BT1 withheld), and gets them at epoch 2 once W1 released them."""
    engine = connect_engine()
    engine.heartbeat(join("W1"), 0)
    engine.install_assignment("W1", 0, 1, targets(W1=units(*ALL)), 1)
    beat(engine, "W1", 2, owned=frozenset())
    engine.heartbeat(join("W2"), 3)
    beat(engine, "W1", 4, owned=units(*ALL))
    engine.install_assignment("W1", 1, 2, targets(W1=units("AC0", "AT1", "AT2"),
                                                  W2=units("BC0", "BT1")), 5)
    r = beat(engine, "W2", 6, owned=frozenset())
    assert r.member_epoch == 2 and r.assignment is None  # nothing new for W2 yet
    assert current(engine, "W2").state is S.UNRELEASED_PARTITIONS
    beat(engine, "W1", 7, owned=units(*ALL))                      # revoke
    beat(engine, "W1", 8, owned=units("AC0", "AT1", "AT2"))       # acknowledged
    r = beat(engine, "W2", 9, owned=frozenset())
    assert (r.member_epoch, r.assignment.units) == (2, units("BC0", "BT1"))
    assert current(engine, "W2").state is S.STABLE


START_35 = {"W1": units("AC0", "AT1"), "W2": units("BC0", "BT1"), "W3": units("AT2")}
# W3's range [0-2] covers W1's and W2's [1-2]: W3 is the only eligible computer, as the
# draft's story has it (ERRATA 19: any eligible member may be chosen).
RANGES = {"W1": (1, 2), "W2": (1, 2), "W3": (0, 2)}


def _w2_dies(engine) -> int:
    """W1 and W3 keep heartbeating; W2 does not and is removed at its session timeout."""
    now = 0
    while engine.has_member("W2"):
        now += 3_000
        for mid in ("W1", "W3"):
            beat(engine, mid, now, owned=current(engine, mid).assigned)
    assert now <= SESSION_MS + 3_000
    return now


def test_worker_leaving_the_group() -> None:
    engine = stable_connect_group(35, START_35, RANGES)
    now = _w2_dies(engine)
    # ERRATA 41: the group is W1, W3 at epoch 36; their current assignments are unchanged.
    assert (engine.group_epoch, engine.member_ids()) == (36, ("W1", "W3"))
    assert current(engine, "W1").assigned == units("AC0", "AT1")
    assert current(engine, "W3").assigned == units("AT2")
    # W3 computes; it keeps the assignments to give W2 a chance to come back.
    assert engine.selected_member == "W3"
    r = beat(engine, "W3", now + 1, owned=units("AT2"))
    assert r.compute_assignment
    assert engine.install_assignment("W3", 35, 36, targets(W1=units("AC0", "AT1"),
                                                           W3=units("AT2")), now + 2).error == 0
    for mid in ("W1", "W3"):
        r = beat(engine, mid, now + 3, owned=current(engine, mid).assigned)
        assert r.member_epoch == 36
    assert current(engine, "W1").assigned == units("AC0", "AT1")
    assert current(engine, "W3").assigned == units("AT2")
    # After the scheduled delay W3 changes its Reason: a metadata change, epoch 37.
    r = beat(engine, "W3", now + 4, owned=units("AT2"), client_assignors=assignors(0, 2, reason=1))
    assert engine.group_epoch == 37 and r.compute_assignment
    # ERRATA 43: BT1, not BC1.
    new = targets(W1=units("AC0", "AT1", "BC0"), W3=units("BT1", "AT2"))
    assert engine.install_assignment("W3", 36, 37, new, now + 5).error == 0
    for mid in ("W1", "W3"):
        beat(engine, mid, now + 6, owned=current(engine, mid).assigned)
    # ERRATA 42: W3 (not W2) holds AT2 at epoch 37.
    assert current(engine, "W1").member_epoch == current(engine, "W3").member_epoch == 37
    assert current(engine, "W1").assigned == units("AC0", "AT1", "BC0")
    assert current(engine, "W3").assigned == units("BT1", "AT2")


def test_worker_bounces() -> None:
    engine = stable_connect_group(35, START_35, RANGES)
    now = _w2_dies(engine)
    assert engine.member_ids() == ("W1", "W3")  # ERRATA 44
    engine.install_assignment("W3", 35, 36, targets(W1=units("AC0", "AT1"), W3=units("AT2")), now)
    for mid in ("W1", "W3"):
        beat(engine, mid, now + 1, owned=current(engine, mid).assigned)
    # ERRATA 46: W2 comes back with its old epoch 35: it is no member, UNKNOWN_MEMBER_ID.
    r = engine.heartbeat(Heartbeat("W2", 35, owned=units("BC0", "BT1")), now + 2)
    assert r.error == ErrorCode.UNKNOWN_MEMBER_ID
    # It rejoins at epoch 0 under the same id: ERRATA 45, group epoch 37.
    r = engine.heartbeat(join("W2", 1, 2), now + 3)
    assert r.error == 0 and engine.group_epoch == 37 and engine.assignment_epoch == 36
    assert r.member_epoch == 36 and r.assignment.units == frozenset()
    # W3 is asked to compute and gives W2 its old work back.
    r = beat(engine, "W3", now + 4, owned=units("AT2"))
    assert r.compute_assignment
    final = {"W1": units("AC0", "AT1"), "W2": units("BC0", "BT1"), "W3": units("AT2")}
    assert engine.install_assignment("W3", 36, 37, targets(**final), now + 5).error == 0
    for mid in ("W1", "W2", "W3"):
        beat(engine, mid, now + 6, owned=current(engine, mid).assigned)
    for mid, us in final.items():
        c = current(engine, mid)
        assert (c.member_epoch, c.assigned, c.state) == (37, us, S.STABLE)
