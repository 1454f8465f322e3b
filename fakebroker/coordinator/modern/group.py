"""What the heartbeat-driven group types share: one reconciliation engine per group, wired
into the coordinator's timers, its events and the shared APIs' ``Group`` protocol.

A ``ModernGroup`` owns a ``GroupEngine`` (``../reconcile/``). The engine keeps its members'
session and rebalance deadlines in a ``Timers`` of its own (the coordinator's timer type);
the group keeps exactly one coordinator timer armed at the engine's earliest deadline, so
``GroupCoordinator.next_deadline`` / ``tick`` fire them in order with every other timer.
After every call into the engine the group ``absorb``s the outcome: the engine's events
(already the coordinator's, naming the group) are published, a change of the group's
state is a ``StateChanged``, and the timer is re-armed.

States are Kafka's ``ConsumerGroupState`` names: Empty (no members), Assigning (the group
epoch is ahead of the target's), Reconciling (some member is not yet stable at the
target epoch), Stable.
"""

from __future__ import annotations

from typing import Generic, Protocol

from ...protocol.error_codes import ErrorCode
from ..env import Env
from ..errors import Code, RuleViolation
from ..events import StateChanged
from ..reconcile import GroupEngine, Outcome
from ..reconcile.units import U

EMPTY = "Empty"
ASSIGNING = "Assigning"
RECONCILING = "Reconciling"
STABLE = "Stable"


class EngineAnswer(Protocol):
    """What every engine call answers besides its result: a refusal (error, rule, message)
    and the outcome to publish."""

    @property
    def error(self) -> Code: ...
    @property
    def rule(self) -> str | None: ...
    @property
    def message(self) -> str | None: ...
    @property
    def outcome(self) -> Outcome: ...


class ModernGroup(Generic[U]):
    """Base of ``ConsumerGroup`` and ``ConnectGroup``; subclasses set ``type`` and
    ``listed_protocol_type``."""

    type = ""
    listed_protocol_type = ""

    def __init__(self, group_id: str, env: Env, engine: GroupEngine[U]) -> None:
        self.group_id = group_id
        self.env = env
        self.engine = engine
        self._timer_key = ("modern-group", group_id)
        self._last_state = self.state_name

    # ------------------------------------------------------------------ Group protocol

    @property
    def state_name(self) -> str:
        e = self.engine
        members = e.member_ids()
        if not members:
            return EMPTY
        if e.group_epoch > e.assignment_epoch:
            return ASSIGNING
        epoch = e.assignment_epoch
        if any(not e.member(m).current.is_reconciled_to(epoch) for m in members):
            return RECONCILING
        return STABLE

    def is_empty(self) -> bool:
        return not self.engine.member_ids()

    def validate_offset_commit(self, member_id: str, group_instance_id: str | None,
                               generation_or_epoch: int, api_version: int) -> None:
        """Kafka's ConsumerGroup.validateOffsetCommit (non-transactional): an empty group
        takes commits without a member (epoch < 0, e.g. an admin client); otherwise the
        member must exist, commit with OffsetCommit v9+ and at its current epoch."""
        if generation_or_epoch < 0 and self.is_empty():
            return
        epoch = self._member_epoch(member_id)
        if api_version < 9:
            raise RuleViolation(ErrorCode.UNSUPPORTED_VERSION, "commit-version-for-member",
                                "OffsetCommit version 9 or above must be used by members "
                                "using the modern group protocol")
        self._require_epoch(generation_or_epoch, epoch)

    def offsets_fetchable(self, member_id: str | None, member_epoch: int) -> bool:
        """Kafka's ConsumerGroup.validateOffsetFetch: a fetch without a member (null id,
        epoch < 0) is accepted; a member must exist and fetch at its current epoch."""
        if member_id is None and member_epoch < 0:
            return True
        epoch = self._member_epoch(member_id or "")
        self._require_epoch(member_epoch, epoch)
        return True

    def _member_epoch(self, member_id: str) -> int:
        if not self.engine.has_member(member_id):
            raise RuleViolation(ErrorCode.UNKNOWN_MEMBER_ID, "offset-member-known",
                                f"Member {member_id} is not a member of group {self.group_id}.")
        return self.engine.member(member_id).current.member_epoch

    @staticmethod
    def _require_epoch(received: int, expected: int) -> None:
        if received != expected:
            raise RuleViolation(ErrorCode.STALE_MEMBER_EPOCH, "offset-member-epoch",
                                f"The received member epoch {received} does not match the "
                                f"expected member epoch {expected}.")

    # ------------------------------------------------------------------ engine glue

    def absorb(self, outcome: Outcome) -> None:
        """Publish what an engine call did (its records and events) and re-arm the group's
        timer."""
        if outcome.records:
            self.env.records.extend(outcome.records)
        for event in outcome.events:
            self.env.emit(event)
        state = self.state_name
        if state != self._last_state:
            self.env.emit(StateChanged(self.group_id, self.env.now_ms, self._last_state, state))
            self._last_state = state
        self.arm()

    def settle(self, result: EngineAnswer) -> None:
        """Publish what an engine call did; a refusal it carries is raised as its rule's
        RuleViolation (the engine changed nothing then, but a timer may have fired)."""
        self.absorb(result.outcome)
        if result.error:
            raise RuleViolation(result.error, result.rule or "", result.message or "")

    def arm(self) -> None:
        deadline = self.engine.next_deadline()
        if deadline is None:
            self.env.timers.cancel(self._timer_key)
        elif self.env.timers.deadline(self._timer_key) != deadline:
            self.env.timers.schedule(self._timer_key, deadline, self._fire)

    def disarm(self) -> None:
        self.env.timers.cancel(self._timer_key)

    def _fire(self) -> None:
        self.absorb(self.engine.advance(self.env.now_ms))


__all__ = ["ModernGroup", "EMPTY", "ASSIGNING", "RECONCILING", "STABLE"]
