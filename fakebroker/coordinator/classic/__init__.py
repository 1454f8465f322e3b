"""The classic group protocol (JoinGroup / SyncGroup / Heartbeat / LeaveGroup)."""

from .group import ClassicGroup, JoinedMember
from .member import ClassicMember, ProtocolMetadata
from .state import ClassicGroupState

__all__ = ["ClassicGroup", "ClassicGroupState", "ClassicMember", "JoinedMember", "ProtocolMetadata"]
