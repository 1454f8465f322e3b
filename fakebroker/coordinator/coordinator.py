"""The group coordinator: requests and virtual time in, replies and events out.

    coord = GroupCoordinator(registry, CoordinatorConfig())
    replies = coord.handle(ctx, join_request, now_ms=0)  # [] while the join is parked
    replies = coord.tick(3000)                          # the initial delay ends: join replies
    coord.next_deadline()                               # when to call tick() next
    coord.drain_events()                                # MemberJoined, StateChanged, ...

It never touches a socket or a clock. Time only moves forward; every input first fires
the timers due by its ``now_ms`` (each at its own deadline), so a request and an expiry
at the same instant see the expiry first. Timers a request sets for its own instant fire
before ``handle`` returns.
"""

from __future__ import annotations

from ..protocol import Registry, Struct, default_registry
from .apis import HANDLERS
from .classic.group import ClassicGroup
from .classic.rebalance import Rebalancer
from .config import CoordinatorConfig
from .context import Reply, RequestContext
from .env import Env
from .events import GroupCreated, GroupEvent
from .group import Group
from .offsets import OffsetStore
from .topics import OpenTopics, TopicCatalog


class GroupCoordinator:
    def __init__(self, registry: Registry | None = None, config: CoordinatorConfig | None = None,
                 *, topics: TopicCatalog | None = None) -> None:
        self.registry = registry if registry is not None else default_registry()
        self.config = config if config is not None else CoordinatorConfig()
        self.env = Env(self.registry, self.config)
        # One namespace for every group type, as in Kafka.
        self.groups: dict[str, Group] = {}
        self.offsets = OffsetStore()
        self.topics: TopicCatalog = topics if topics is not None else OpenTopics()
        self.rebalancer = Rebalancer(self.env, self.classic_group)
        self._started = False

    # ------------------------------------------------------------------ inputs

    def api_keys(self) -> list[int]:
        """The APIs this coordinator answers."""
        return sorted(HANDLERS)

    def handle(self, ctx: RequestContext, body: Struct, now_ms: int) -> list[Reply]:
        """Handle one request. Returns the replies ready now: possibly none (a parked
        JoinGroup or SyncGroup), possibly several (a join that completes a phase answers
        every parked join). Replies to requests parked earlier may come first."""
        handler = HANDLERS.get(ctx.api_key)
        if handler is None:
            raise ValueError(f"API key {ctx.api_key} is not a group coordinator API")
        mt = self.registry.request(ctx.api_key)
        if type(body) is not mt.cls:
            raise TypeError(f"expected a {mt.name}, got {type(body).__name__}")
        if not mt.supports(ctx.api_version):
            raise ValueError(f"{mt.name} has no version {ctx.api_version}")
        self._advance(now_ms)
        handler(self, ctx, body)
        self._advance(now_ms)  # a timer the request set for "now" (e.g. a zero delay) fires too
        return self.env.take_replies()

    def tick(self, now_ms: int) -> list[Reply]:
        """Fire every timer due by ``now_ms``; returns the replies they produce."""
        self._advance(now_ms)
        return self.env.take_replies()

    def next_deadline(self) -> int | None:
        return self.env.timers.next_deadline()

    def drain_events(self) -> list[GroupEvent]:
        out, self.env.events = self.env.events, []
        return out

    def mark_dead(self, group_id: str, now_ms: int) -> list[Reply]:
        """Unload a classic group as Kafka does when its coordinator moves: it becomes Dead,
        its parked requests get NOT_COORDINATOR and its timers stop."""
        self._advance(now_ms)
        group = self.classic_group(group_id)
        if group is None:
            raise KeyError(f"no classic group {group_id!r}")
        self.rebalancer.unload(group)
        return self.env.take_replies()

    # ------------------------------------------------------------------ groups

    def classic_group(self, group_id: str) -> ClassicGroup | None:
        group = self.groups.get(group_id)
        return group if isinstance(group, ClassicGroup) else None

    def create_classic_group(self, group_id: str) -> ClassicGroup:
        if group_id in self.groups:
            raise ValueError(f"group {group_id!r} already exists")
        group = ClassicGroup(group_id, self.env)
        self.groups[group_id] = group
        self.env.emit(GroupCreated(group_id, self.env.now_ms, group.type))
        return group

    # ------------------------------------------------------------------ time

    def _advance(self, now_ms: int) -> None:
        if self._started and now_ms < self.env.now_ms:
            raise ValueError(f"time went backwards: {now_ms} < {self.env.now_ms}")
        self._started = True
        while (due := self.env.timers.pop_due(now_ms)) is not None:
            deadline, action = due
            self.env.now_ms = max(deadline, self.env.now_ms)
            action()
        self.env.now_ms = now_ms
