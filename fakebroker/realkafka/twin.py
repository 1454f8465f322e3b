"""The fake broker configured like a real one: the same group settings from the same
``KafkaSettings``, so that a difference in answers is a difference of behaviour, not of
configuration."""

from __future__ import annotations

from typing import Any

from ..coordinator.config import KAFKA_PROPERTY_NAMES, CoordinatorConfig
from ..server.broker import FakeBroker
from ..server.clock import RealClock
from ..server.config import BrokerConfig, Topic
from ..server.thread import BrokerThread
from .settings import KafkaSettings


def twin_config(settings: KafkaSettings) -> CoordinatorConfig:
    props: dict[str, Any] = {
        "group.initial.rebalance.delay.ms": settings.initial_rebalance_delay_ms,
        "group.min.session.timeout.ms": settings.min_session_timeout_ms,
        "group.max.session.timeout.ms": settings.max_session_timeout_ms,
    }
    # Further broker properties the fake knows (group.max.size, group.consumer.*, ...).
    props.update({k: v for k, v in settings.properties.items() if k in KAFKA_PROPERTY_NAMES})
    return CoordinatorConfig.from_properties(props)


def start_twin(settings: KafkaSettings | None = None, *, topics: dict[str, int] | None = None) -> BrokerThread:
    """A fake broker on an ephemeral loopback port, on the wall clock (the real broker's
    time is the wall's too), in a background thread."""
    cfg = BrokerConfig(topics=[Topic(n, p) for n, p in (topics or {}).items()])
    # strict_topics: the coordinator knows the topics (consumer groups assign their
    # partitions, the offset APIs refuse unknown topics), as a real broker does.
    broker = FakeBroker(cfg, twin_config(settings or KafkaSettings()), RealClock(), strict_topics=True)
    return BrokerThread(broker).start()
