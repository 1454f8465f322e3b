"""One member's reconciliation step: from its current assignment towards its target.

A pure function of (current assignment, target epoch and units, what the member reports
owning, who else holds which unit). It follows the three phases of the draft's "Member
Epoch - Reconciliation of the group" and Kafka's KIP-848 state machine
(``CurrentAssignmentBuilder``):

1. *Revoke.* Units the member holds that left its target are taken back: the member keeps
   only ``assigned & target``, moves to UNREVOKED_PARTITIONS and stays at its epoch until
   a heartbeat no longer reports any of them.
2. *Move to the target epoch.* Once nothing is left to revoke, the member takes the target
   epoch (after an acknowledged revocation: at most its epoch + 1, Kafka's rule, so an
   epoch is never skipped past a pending target).
3. *Assign.* Target units are handed over only when no other member holds them (assigned
   or pending revocation); those still held are withheld and the member waits in
   UNRELEASED_PARTITIONS, getting them at later heartbeats as they are released.

A step never revokes and assigns at once: when something must be revoked, nothing new is
added to the member's units in the same step.
"""

from __future__ import annotations

from collections.abc import Callable

from ...protocol.error_codes import ErrorCode
from ..errors import RuleViolation
from .member import CurrentAssignment, MemberState, MemberTarget
from .units import EMPTY, U

S = MemberState


def reconcile(current: CurrentAssignment[U], *, target_epoch: int, target: MemberTarget[U],
              owned: frozenset[U] | None,
              held_by_other: Callable[[U], bool]) -> CurrentAssignment[U]:
    """The member's next current assignment (``current`` itself when it cannot move).

    ``owned`` is what the member reported owning in this heartbeat, None when it did not
    say (unchanged since its last heartbeat): then a pending revocation counts as not yet
    acknowledged. ``held_by_other(unit)`` tells whether another member still holds it.
    Raises ``RuleViolation`` (FENCED_MEMBER_EPOCH) only for a member in the UNKNOWN state that
    does not report owning nothing.
    """
    state = current.state
    if state is S.STABLE:
        if current.member_epoch == target_epoch:
            return current
        return _next(current, current.member_epoch, target_epoch, target, owned, held_by_other)
    if state is S.UNREVOKED_PARTITIONS:
        if _still_owns(owned, current.pending_revocation):
            return current
        return _next(current, min(current.member_epoch + 1, target_epoch), target_epoch, target,
                     owned, held_by_other)
    if state is S.UNRELEASED_PARTITIONS:
        return _next(current, current.member_epoch, target_epoch, target, owned, held_by_other)
    # UNKNOWN: only a member that owns nothing may go on; it restarts from its target.
    if owned is None or owned:
        raise RuleViolation(ErrorCode.FENCED_MEMBER_EPOCH, "unknown-member-state-rejoins-empty",
                            "the member's state is unknown to this coordinator")
    return _next(current, target_epoch, target_epoch, target, owned, held_by_other)


def _still_owns(owned: frozenset[U] | None, revoked: frozenset[U]) -> bool:
    """Kafka's ``ownsRevokedPartitions``: no report means no acknowledgement."""
    return owned is None or not owned.isdisjoint(revoked)


def _next(current: CurrentAssignment[U], member_epoch: int, target_epoch: int,
          target: MemberTarget[U], owned: frozenset[U] | None,
          held_by_other: Callable[[U], bool]) -> CurrentAssignment[U]:
    # A set that does not change is passed on as it is (the engine then writes and replays
    # no new copy of it): most steps only move an epoch.
    assigned = current.assigned
    if assigned <= target.units:
        kept, to_revoke = assigned, EMPTY
    else:
        kept = assigned & target.units
        to_revoke = assigned - kept
    wanted = target.units - kept
    unreleased = frozenset(u for u in wanted if held_by_other(u)) if wanted else EMPTY
    to_assign = wanted - unreleased if unreleased else wanted

    if to_revoke and _still_owns(owned, to_revoke):
        # Phase 1: take back, add nothing; the epoch stays.
        return current.with_epoch(member_epoch, state=S.UNREVOKED_PARTITIONS,
                                  assigned=kept, pending_revocation=to_revoke)
    # Phases 2 and 3: the target epoch, with every target unit that is free.
    state = S.UNRELEASED_PARTITIONS if unreleased else S.STABLE
    return current.with_epoch(target_epoch, state=state,
                              assigned=kept | to_assign if to_assign else kept,
                              pending_revocation=EMPTY, payload=target.payload)


__all__ = ["reconcile"]
