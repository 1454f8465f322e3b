"""Explicit events the engine reports (for logs, transcripts and tests; the engine never
reads them back). Every event carries the virtual time it happened at."""

from __future__ import annotations

from dataclasses import dataclass

from ..events import RemovalReason  # one vocabulary of removals, the coordinator's
from .member import MemberState


@dataclass(frozen=True)
class EngineEvent:
    at_ms: int


@dataclass(frozen=True)
class MemberJoined(EngineEvent):
    member_id: str
    replaces: str | None = None  # the member id a static member rejoined in place of


@dataclass(frozen=True)
class MemberRemoved(EngineEvent):
    member_id: str
    reason: RemovalReason


@dataclass(frozen=True)
class GroupEpochBumped(EngineEvent):
    epoch: int
    reason: str


@dataclass(frozen=True)
class TargetAssignmentUpdated(EngineEvent):
    assignment_epoch: int
    source: str  # "assignor:<name>" or "install:<member id>"


@dataclass(frozen=True)
class MemberTransitioned(EngineEvent):
    member_id: str
    from_state: MemberState
    from_epoch: int
    to_state: MemberState
    to_epoch: int


@dataclass(frozen=True)
class ComputeAssignmentRequested(EngineEvent):
    """Connect groups: ``member_id`` must compute the target for ``group_epoch``."""

    member_id: str
    group_epoch: int


__all__ = ["RemovalReason", "EngineEvent", "MemberJoined", "MemberRemoved", "GroupEpochBumped",
           "TargetAssignmentUpdated", "MemberTransitioned", "ComputeAssignmentRequested"]
