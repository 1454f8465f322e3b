"""The KIP-848 reconciliation engine, sans-IO and generic over the assignable unit.

One ``GroupEngine`` runs one heartbeat-driven group: a consumer group (units are
``TopicPartition``; the target is computed by a server-side assignor, ``ServerAssigned``)
or the draft's connect group (units are ``ConnectUnit``; the target is installed by the
selected worker, ``Installed``). Modules:

- ``units``: the unit types and their order
- ``member``: member states, metadata, target entries and current assignments
- ``reconciliation``: one member's step towards its target (the three phases)
- ``target``: where targets come from (server assignors / installed)
- ``assignors``: Kafka's ``uniform`` and ``range`` server-side assignors
- ``validation``: the rules, one function each, that refuse requests
- ``records``: the durable state as records, the store, compaction
- ``wire_records``: connect groups' records as log bytes (key / value per the record
  specs) and back, and a byte log store
- ``api``: what goes into and comes out of the engine's calls (config, heartbeat, results)
- ``state``: the group's durable state, the indexes derived from it, and how records change it
- ``static_members``: KIP-848 static membership (leave at epoch -2, take a place over)
- ``engine``: the state machine tying them together, on a virtual clock
- ``connect``: the draft's connect-specific rules and message mapping
"""

from __future__ import annotations

from .assignors import AssignmentSpec, Assignor, AssignorError, RangeAssignor, UniformAssignor
from .api import (AssignmentView, EngineConfig, GroupSnapshot, Heartbeat, HeartbeatResult, InstallResult,
                  Outcome, PreparedMember, PrepareResult)
from .engine import GroupEngine
# The engine reports in the coordinator's one event vocabulary (``fakebroker.coordinator.events``).
from ..events import (AssignmentComputeRequested, GroupEpochChanged, GroupEvent, MemberEpochChanged,
                      MemberJoined, MemberRemoved, RemovalReason, TargetAssignmentChanged)
from .member import (AssignmentPayload, ClientAssignor, CurrentAssignment, Member,
                     MemberMetadata, MemberState, MemberTarget)
from .records import InMemoryRecordStore, Record, RecordStore, compact, group_metadata_records
from .reconciliation import reconcile
from .target import Installed, ServerAssigned, sticky_smallest_id
from .units import ConnectUnit, TopicPartition, sorted_units, topic_catalog

__all__ = [
    "AssignmentSpec", "Assignor", "AssignorError", "RangeAssignor", "UniformAssignor",
    "AssignmentView", "EngineConfig", "GroupEngine", "GroupSnapshot", "Heartbeat",
    "HeartbeatResult", "InstallResult", "Outcome", "PreparedMember", "PrepareResult",
    "AssignmentComputeRequested", "GroupEpochChanged", "GroupEvent", "MemberEpochChanged",
    "MemberJoined", "MemberRemoved", "RemovalReason", "TargetAssignmentChanged", "AssignmentPayload", "ClientAssignor",
    "CurrentAssignment", "Member", "MemberMetadata", "MemberState", "MemberTarget",
    "InMemoryRecordStore", "Record", "RecordStore", "compact", "group_metadata_records",
    "reconcile", "Installed", "ServerAssigned", "sticky_smallest_id", "ConnectUnit",
    "TopicPartition", "sorted_units", "topic_catalog",
]
