"""Heartbeat-driven group types: Kafka's KIP-848 ``consumer`` group and the draft's
``connect`` group, each a reconciliation engine (``../reconcile/``) behind the
coordinator's ``Group`` protocol. See ``README.md``."""

from .connect import CONNECT, ConnectGroup
from .consumer import CONSUMER, ConsumerGroup
from .group import ASSIGNING, EMPTY, RECONCILING, STABLE, ModernGroup

__all__ = ["CONNECT", "CONSUMER", "ConnectGroup", "ConsumerGroup", "ModernGroup", "ASSIGNING",
           "EMPTY", "RECONCILING", "STABLE"]
