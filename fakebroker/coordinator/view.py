"""What the API handlers (``apis/``) and ``migration`` use of the coordinator, as a
``Protocol``: they are below ``coordinator.py``, which owns them through its dispatch
table, so they name this much of it instead of importing it back."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..protocol import Registry
    from .classic.group import ClassicGroup
    from .classic.rebalance import Rebalancer
    from .config import CoordinatorConfig
    from .env import Env
    from .group import Group
    from .modern import ConnectGroup, ConsumerGroup, ModernGroup
    from .offsets import OffsetStore
    from .topics import TopicCatalog


class CoordinatorView(Protocol):
    """The group coordinator (``coordinator.GroupCoordinator``) as a handler sees it."""

    registry: Registry
    env: Env
    groups: dict[str, Group]
    offsets: OffsetStore
    topics: TopicCatalog
    rebalancer: Rebalancer

    @property
    def config(self) -> CoordinatorConfig: ...

    def create_classic_group(self, group_id: str) -> ClassicGroup: ...

    def new_consumer_group(self, group_id: str) -> ConsumerGroup: ...

    def new_connect_group(self, group_id: str) -> ConnectGroup: ...

    def adopt(self, group: ModernGroup, *, converting: bool = False) -> None: ...  # type: ignore[type-arg]

    def drop_group(self, group_id: str, replaced_by: str) -> None: ...
