"""A classic group's membership, generation, protocol and leader, and its state machine.

This is data plus the invariants Kafka keeps on it (``ClassicGroup.java``); deciding *when*
to rebalance is ``rebalance.py``'s job. Every change of state, generation, leader or
membership emits an event.

Determinism where Kafka uses hash order:
- members are kept in join order (a dict); "the first member" is the longest-standing one;
- a restarted static member takes its predecessor's place in that order;
- the protocol vote breaks ties by the lexicographically smallest protocol name.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ...protocol.error_codes import ErrorCode
from ..context import RequestContext
from ..env import Env
from ..errors import RuleViolation
from ..events import (GenerationChanged, LeaderChanged, MemberJoined, MemberRemoved,
                      RemovalReason, StateChanged)
from ..group import CLASSIC
from .member import ClassicMember, ProtocolMetadata
from .state import ClassicGroupState

S = ClassicGroupState


@dataclass(frozen=True)
class JoinedMember:
    """One entry of the leader's JoinGroup response."""

    member_id: str
    group_instance_id: str | None
    metadata: bytes


class ClassicGroup:
    type = CLASSIC

    def __init__(self, group_id: str, env: Env) -> None:
        self.group_id = group_id
        self._env = env
        self.state = S.EMPTY
        self.previous_state = S.DEAD
        self.state_timestamp_ms = env.now_ms
        self.generation_id = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, ClassicMember] = {}
        # How many members list each protocol, kept as members come, go and rejoin, so a
        # join costs O(its protocols), not O(group size) (Kafka keeps the same count).
        self._protocol_counts: Counter[str] = Counter()
        self.static_members: dict[str, str] = {}  # group.instance.id -> member id
        # Ordered sets (dicts) keep iteration deterministic.
        self.pending_join: dict[str, None] = {}  # ids issued with MEMBER_ID_REQUIRED
        self.pending_sync: dict[str, None] = {}  # members the sync phase still waits for
        # Set when a member joins during the initial rebalance: the delay is extended.
        self.new_member_added = False
        # Members with a parked JoinGroup (Kafka's numMembersAwaitingJoinResponse): kept as
        # joins park and are answered, so each join checks "all rejoined?" in O(1).
        self._awaiting_join = 0

    # ------------------------------------------------------------------ Group protocol

    @property
    def state_name(self) -> str:
        return self.state.value

    @property
    def listed_protocol_type(self) -> str:
        return self.protocol_type or ""

    def is_empty(self) -> bool:
        return self.state is S.EMPTY

    def validate_offset_commit(self, member_id: str, group_instance_id: str | None,
                               generation_or_epoch: int, api_version: int) -> None:
        from .rules import require_offset_commit_allowed

        require_offset_commit_allowed(self, member_id, group_instance_id, generation_or_epoch)

    def offsets_fetchable(self, member_id: str | None, member_epoch: int) -> bool:
        # Kafka treats a Dead classic group as not found (and so returns no offsets).
        return self.state is not S.DEAD

    # ------------------------------------------------------------------ queries

    def in_state(self, *states: ClassicGroupState) -> bool:
        return self.state in states

    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def member(self, member_id: str) -> ClassicMember:
        return self.members[member_id]

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id is not None and self.leader_id == member_id

    def is_pending(self, member_id: str) -> bool:
        return member_id in self.pending_join

    def static_member_id(self, group_instance_id: str) -> str | None:
        return self.static_members.get(group_instance_id)

    def num_awaiting_join(self) -> int:
        return self._awaiting_join

    def has_all_members_joined(self) -> bool:
        return self.num_awaiting_join() == len(self.members) and not self.pending_join

    def not_yet_rejoined(self) -> list[ClassicMember]:
        return [m for m in self.members.values() if not m.is_awaiting_join]

    def rebalance_timeout_ms(self) -> int:
        """The largest rebalance timeout of the members (0 without members)."""
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def can_rebalance(self) -> bool:
        return S.PREPARING_REBALANCE.can_follow(self.state)

    def has_received_sync_from_all(self) -> bool:
        return not self.pending_sync

    def supports_protocols(self, protocol_type: str, protocol_names: frozenset[str]) -> bool:
        """Kafka's rule: an Empty group takes any non-empty type with at least one protocol;
        otherwise the type must match and one of the protocols must be supported by all."""
        if self.state is S.EMPTY:
            return protocol_type != "" and bool(protocol_names)
        if self.protocol_type != protocol_type:
            return False
        counts = self._protocol_counts
        return any(counts.get(name, 0) == len(self.members) for name in protocol_names)

    def candidate_protocols(self) -> frozenset[str]:
        counts = self._protocol_counts
        return frozenset(name for name, n in counts.items() if n == len(self.members))

    def select_protocol(self) -> str:
        """The vote: each member votes for its first protocol every member supports; most
        votes wins; a tie goes to the smallest name (Kafka's tie is hash order)."""
        if not self.members:
            raise ValueError(f"cannot select a protocol for empty group {self.group_id}")
        candidates = self.candidate_protocols()
        votes = Counter(m.vote(candidates) for m in self.members.values())
        return min(votes, key=lambda name: (-votes[name], name))

    def joined_members(self) -> list[JoinedMember]:
        """The leader's view: every member with its metadata for the chosen protocol."""
        if self.state in (S.DEAD, S.PREPARING_REBALANCE):
            raise ValueError(f"no member metadata for group {self.group_id} in {self.state}")
        assert self.protocol_name is not None
        return [JoinedMember(m.member_id, m.group_instance_id, m.metadata(self.protocol_name))
                for m in self.members.values()]

    def set_protocols(self, member: ClassicMember, protocols: tuple[ProtocolMetadata, ...]) -> None:
        """Replace a member's protocols, keeping the per-protocol counts right.
        A name listed twice by one member counts once (Kafka would count it twice)."""
        before = member.protocol_names
        member.protocols = protocols
        after = member.protocol_names
        if after == before:  # (a rejoin, as a rebalance's every member: no count moves)
            return
        self._protocol_counts.subtract(before)
        self._protocol_counts.update(after)
        self._protocol_counts += Counter()  # drop names no member lists any more

    # ------------------------------------------------------------------ changes

    def park_join(self, member: ClassicMember, ctx: RequestContext) -> None:
        """Park ``ctx`` as the member's JoinGroup (replacing one parked before, unanswered)."""
        if member.awaiting_join is None and member.member_id in self.members:
            self._awaiting_join += 1
        member.awaiting_join = ctx

    def take_join(self, member: ClassicMember) -> RequestContext | None:
        """The member's parked JoinGroup, now no longer parked (None if it had none)."""
        ctx = member.awaiting_join
        if ctx is not None:
            member.awaiting_join = None
            if self.members.get(member.member_id) is member:
                self._awaiting_join -= 1
        return ctx

    def transition_to(self, state: ClassicGroupState) -> None:
        if not state.can_follow(self.state):
            raise ValueError(f"group {self.group_id}: {self.state} -> {state} is not a valid transition")
        self.previous_state, self.state = self.state, state
        self.state_timestamp_ms = self._env.now_ms
        self._env.emit(StateChanged(self.group_id, self._env.now_ms, self.previous_state.value,
                                    state.value))

    def add(self, member: ClassicMember) -> None:
        if member.group_instance_id is not None:
            if member.group_instance_id in self.static_members:
                raise ValueError(f"static member {member.group_instance_id} is already in "
                                 f"group {self.group_id}")
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if member.protocol_type != self.protocol_type:
            raise ValueError("the group and the member must have the same protocol type")
        if not self.supports_protocols(member.protocol_type, member.protocol_names):
            raise ValueError("the group supports none of the member's protocols")
        self.members[member.member_id] = member
        self._awaiting_join += member.is_awaiting_join
        self._protocol_counts.update(member.protocol_names)
        self.pending_join.pop(member.member_id, None)
        self._env.emit(MemberJoined(self.group_id, self._env.now_ms, member.member_id,
                                    member.group_instance_id))
        if self.leader_id is None:
            self._set_leader(member.member_id)

    def remove(self, member_id: str, reason: RemovalReason, detail: str = "") -> None:
        """Drop a member or a pending member id; the leader passes to the first member left."""
        member = self.members.pop(member_id, None)
        was_pending = member_id in self.pending_join
        self.pending_join.pop(member_id, None)
        self.pending_sync.pop(member_id, None)
        if member is not None:
            self._awaiting_join -= member.is_awaiting_join
            self._protocol_counts.subtract(member.protocol_names)
            self._protocol_counts += Counter()
            if member.group_instance_id is not None:
                self.static_members.pop(member.group_instance_id, None)
            self._env.emit(MemberRemoved(self.group_id, self._env.now_ms, member_id,
                                         member.group_instance_id, reason, detail=detail))
        elif was_pending:
            self._env.emit(MemberRemoved(self.group_id, self._env.now_ms, member_id, None,
                                         reason, pending=True, detail=detail))
        if self.is_leader(member_id):
            self._set_leader(next(iter(self.members), None))

    def add_pending(self, member_id: str) -> None:
        if member_id in self.members:
            raise ValueError(f"{member_id} is already a member of group {self.group_id}")
        self.pending_join[member_id] = None

    def replace_static_member(self, group_instance_id: str, old_member_id: str,
                              new_member_id: str) -> ClassicMember:
        """Give a restarted static member a new id, in its predecessor's place; the caller
        has already answered the predecessor's parked requests with FENCED_INSTANCE_ID."""
        old = self.members[old_member_id]
        self._awaiting_join -= old.is_awaiting_join
        new = ClassicMember(new_member_id, old.group_instance_id, old.client_id, old.client_host,
                            old.rebalance_timeout_ms, old.session_timeout_ms, old.protocol_type,
                            old.protocols, old.assignment)
        self.members = {(new_member_id if k == old_member_id else k): (new if k == old_member_id else v)
                        for k, v in self.members.items()}
        # Like Kafka, the old id stays in pending_sync: if it never synced, the sync
        # expiration still fires for it and starts a rebalance.
        self.static_members[group_instance_id] = new_member_id
        now = self._env.now_ms
        self._env.emit(MemberRemoved(self.group_id, now, old_member_id, group_instance_id,
                                     RemovalReason.FENCED))
        self._env.emit(MemberJoined(self.group_id, now, new_member_id, group_instance_id,
                                    replaces=old_member_id))
        if self.is_leader(old_member_id):
            self._set_leader(new_member_id)
        return new

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep the leader if it rejoined; else the first member that did; False if none did."""
        if self.leader_id is None:
            return False
        if self.members[self.leader_id].is_awaiting_join:
            return True
        for m in self.members.values():
            if m.is_awaiting_join:
                self._set_leader(m.member_id)
                return True
        return False

    def init_next_generation(self) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition_to(S.COMPLETING_REBALANCE)
        else:
            self.protocol_name = None
            self.transition_to(S.EMPTY)
        self.pending_sync.clear()
        self._env.emit(GenerationChanged(self.group_id, self._env.now_ms, self.generation_id,
                                         self.protocol_name))

    def _set_leader(self, leader_id: str | None) -> None:
        if leader_id != self.leader_id:
            previous, self.leader_id = self.leader_id, leader_id
            self._env.emit(LeaderChanged(self.group_id, self._env.now_ms, leader_id, previous))

    # ------------------------------------------------------------------ identity check

    def validate_member(self, member_id: str, group_instance_id: str | None) -> None:
        """Kafka's validateMember: a static member's instance must map to this member id
        (FENCED_INSTANCE_ID otherwise), and the member id must be known."""
        if group_instance_id is not None:
            existing = self.static_members.get(group_instance_id)
            if existing is None:
                raise RuleViolation(ErrorCode.UNKNOWN_MEMBER_ID, "static-instance-known",
                                    f"no member has group.instance.id {group_instance_id!r}")
            if existing != member_id:
                raise RuleViolation(ErrorCode.FENCED_INSTANCE_ID, "static-instance-owns-member-id",
                                    f"{group_instance_id!r} belongs to {existing!r}")
        if member_id not in self.members:
            raise RuleViolation(ErrorCode.UNKNOWN_MEMBER_ID, "member-id-known",
                                f"{member_id!r} is not a member of {self.group_id!r}")
