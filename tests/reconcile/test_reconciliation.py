"""One member's reconciliation step (``reconcile``), phase by phase and state by state."""

from __future__ import annotations

import pytest

from fakebroker.coordinator.errors import RuleViolation
from fakebroker.coordinator.reconcile import (AssignmentPayload, CurrentAssignment, MemberState,
                                              MemberTarget, reconcile)
from fakebroker.protocol.error_codes import ErrorCode

S = MemberState
FREE = lambda unit: False  # noqa: E731 - nobody else holds anything


def cur(state=S.STABLE, epoch=1, prev=0, assigned=(), pending=()) -> CurrentAssignment:
    return CurrentAssignment(state=state, member_epoch=epoch, previous_member_epoch=prev,
                             assigned=frozenset(assigned), pending_revocation=frozenset(pending))


def tgt(*units: int, payload: AssignmentPayload | None = None) -> MemberTarget:
    return MemberTarget(frozenset(units), payload or AssignmentPayload())


def test_stable_at_target_epoch_stays() -> None:
    c = cur(epoch=3, assigned={1, 2})
    assert reconcile(c, target_epoch=3, target=tgt(1, 2, 9), owned=None, held_by_other=FREE) is c


def test_new_member_moves_to_target_epoch_with_free_units() -> None:
    c = CurrentAssignment()
    n = reconcile(c, target_epoch=5, target=tgt(1, 2), owned=frozenset(), held_by_other=FREE)
    assert (n.state, n.member_epoch, n.previous_member_epoch, n.assigned) == \
        (S.STABLE, 5, 0, frozenset({1, 2}))


def test_phase1_revokes_and_keeps_epoch() -> None:
    c = cur(epoch=3, prev=2, assigned={1, 2, 3})
    n = reconcile(c, target_epoch=4, target=tgt(1, 4), owned=frozenset({1, 2, 3}),
                  held_by_other=FREE)
    assert n.state is S.UNREVOKED_PARTITIONS
    assert (n.member_epoch, n.assigned, n.pending_revocation) == (3, {1}, {2, 3})
    # Nothing new while revoking, even though 4 is free.
    assert 4 not in n.assigned


def test_revocation_not_acknowledged_without_report_or_while_still_owned() -> None:
    c = cur(S.UNREVOKED_PARTITIONS, epoch=3, assigned={1}, pending={2, 3})
    for owned in (None, frozenset({1, 2}), frozenset({3})):
        assert reconcile(c, target_epoch=4, target=tgt(1, 4), owned=owned,
                         held_by_other=FREE) is c


def test_phase2_and_3_after_acknowledgement() -> None:
    c = cur(S.UNREVOKED_PARTITIONS, epoch=3, prev=2, assigned={1}, pending={2, 3})
    n = reconcile(c, target_epoch=4, target=tgt(1, 4), owned=frozenset({1}), held_by_other=FREE)
    assert (n.state, n.member_epoch, n.previous_member_epoch) == (S.STABLE, 4, 3)
    assert n.assigned == {1, 4} and not n.pending_revocation


def test_acknowledged_revocation_advances_one_epoch_at_most() -> None:
    """Kafka: after revoking, the member goes to epoch + 1 (capped at the target epoch);
    with more to revoke for a newer target it stays revoking at that epoch."""
    c = cur(S.UNREVOKED_PARTITIONS, epoch=3, assigned={1, 2}, pending={3})
    n = reconcile(c, target_epoch=7, target=tgt(1), owned=frozenset({1, 2}), held_by_other=FREE)
    assert (n.state, n.member_epoch, n.pending_revocation, n.assigned) == \
        (S.UNREVOKED_PARTITIONS, 4, {2}, {1})


def test_units_held_by_others_are_withheld() -> None:
    c = cur(epoch=3, assigned={1})
    n = reconcile(c, target_epoch=4, target=tgt(1, 2, 3), owned=frozenset({1}),
                  held_by_other=lambda u: u == 3)
    assert (n.state, n.member_epoch, n.assigned) == (S.UNRELEASED_PARTITIONS, 4, {1, 2})
    # Later, 3 is released: handed over, the epoch stays.
    m = reconcile(n, target_epoch=4, target=tgt(1, 2, 3), owned=frozenset({1, 2}),
                  held_by_other=FREE)
    assert (m.state, m.member_epoch, m.assigned) == (S.STABLE, 4, {1, 2, 3})


def test_unreleased_with_nothing_free_moves_epoch_only() -> None:
    c = cur(epoch=3, assigned={1})
    n = reconcile(c, target_epoch=4, target=tgt(1, 2), owned=frozenset({1}),
                  held_by_other=lambda u: True)
    assert (n.state, n.member_epoch, n.assigned) == (S.UNRELEASED_PARTITIONS, 4, {1})


def test_unreleased_member_meets_newer_target_that_revokes() -> None:
    c = cur(S.UNRELEASED_PARTITIONS, epoch=4, prev=3, assigned={1, 2})
    n = reconcile(c, target_epoch=6, target=tgt(2, 5), owned=frozenset({1, 2}),
                  held_by_other=FREE)
    assert (n.state, n.member_epoch, n.assigned, n.pending_revocation) == \
        (S.UNREVOKED_PARTITIONS, 4, {2}, {1})


def test_already_released_units_need_no_revocation_round() -> None:
    """Kafka: when the member no longer reports a unit to revoke, it goes straight on."""
    c = cur(epoch=3, assigned={1, 2})
    n = reconcile(c, target_epoch=4, target=tgt(1, 5), owned=frozenset({1}), held_by_other=FREE)
    assert (n.state, n.member_epoch, n.assigned) == (S.STABLE, 4, {1, 5})


def test_own_pending_units_are_not_unreleased() -> None:
    """KAFKA-19449: a unit the member itself had pending revocation (and acknowledged)
    is not waited for when its target gives it back."""
    c = cur(S.UNREVOKED_PARTITIONS, epoch=3, assigned={1}, pending={2})
    n = reconcile(c, target_epoch=5, target=tgt(1, 2), owned=frozenset({1}),
                  held_by_other=lambda u: False)
    assert (n.state, n.assigned) == (S.STABLE, {1, 2})


def test_payload_follows_the_target_epoch() -> None:
    p = AssignmentPayload(error=1, version=2, metadata=b"x")
    c = cur(epoch=3, assigned={1, 2})
    revoking = reconcile(c, target_epoch=4, target=tgt(1, payload=p), owned=frozenset({1, 2}),
                         held_by_other=FREE)
    assert revoking.payload == AssignmentPayload()
    done = reconcile(revoking, target_epoch=4, target=tgt(1, payload=p), owned=frozenset({1}),
                     held_by_other=FREE)
    assert done.payload == p


def test_unknown_state_must_rejoin_owning_nothing() -> None:
    c = cur(S.UNKNOWN, epoch=3, assigned={1})
    for owned in (None, frozenset({1})):
        with pytest.raises(RuleViolation) as info:
            reconcile(c, target_epoch=4, target=tgt(1), owned=owned, held_by_other=FREE)
        assert info.value.error == ErrorCode.FENCED_MEMBER_EPOCH
    n = reconcile(c, target_epoch=4, target=tgt(1), owned=frozenset(), held_by_other=FREE)
    assert (n.state, n.member_epoch) == (S.STABLE, 4)


def test_member_state_values_are_kafkas() -> None:
    assert [s.value for s in S] == [0, 1, 2, 127]
    assert S.from_value(9) is S.UNKNOWN and S.from_value(1) is S.UNREVOKED_PARTITIONS
