"""The broker golden transcripts are recorded on, and replayed against on a virtual clock.

The transcripts and the scenarios that record them are the conformance suite's
(``conformance/suites/coordinator/golden``, ``conformance golden``); what a replay needs to
rebuild their broker lives here, below the suite: its topic, its settings beside Kafka's
defaults, and the binding of topic ids.
"""

from __future__ import annotations

from typing import Any

from ..coordinator.config import CoordinatorConfig
from ..protocol import Registry
from ..server.broker import FakeBroker
from ..server.clock import VirtualClock
from ..server.config import BrokerConfig, Topic

TOPICS = {"events": 3}
TOPIC_ID_PREFIX = "topic_id."  # a replay binds topic_id.<name> to the target's own id

# Kafka's broker defaults for the settings a golden header records: a replay names the
# ones a transcript was recorded with that differ, so a failure on another coordinator
# can be told from a difference of configuration.
KAFKA_DEFAULTS: dict[str, Any] = {
    "initial_rebalance_delay_ms": 3000, "min_session_timeout_ms": 6000,
    "max_session_timeout_ms": 1_800_000, "max_group_size": 2**31 - 1,
    "offset_metadata_max_bytes": 4096, "new_member_join_timeout_ms": 300_000,
}


def golden_broker(settings: dict[str, Any], registry: Registry, *,
                  member_id_suffix: Any = None) -> FakeBroker:
    """The broker goldens are recorded on (and replayed against in tests): the settings,
    the topic ``events`` (3 partitions) known to the offset APIs, a virtual clock."""
    extra = {"member_id_suffix": member_id_suffix} if member_id_suffix is not None else {}
    return FakeBroker(BrokerConfig(topics=[Topic(n, p) for n, p in TOPICS.items()]),
                      CoordinatorConfig(**settings, **extra), VirtualClock(), registry,
                      strict_topics=True)
