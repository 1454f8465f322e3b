"""What a broker-side API handler may read: the registry, the config, the bound address."""

from __future__ import annotations

from dataclasses import dataclass

from ...protocol import Registry
from ..clock import Clock
from ..config import BrokerConfig


@dataclass
class BrokerContext:
    registry: Registry
    config: BrokerConfig
    clock: Clock
    host: str  # the address clients reach us on
    port: int
    supported: dict[int, tuple[int, int]]  # api key -> advertised (min, max)
