"""What every part of a coordinator shares while it handles one input: the virtual time,
the timers, and the outboxes of replies and events."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..protocol import Registry, Struct
from .config import CoordinatorConfig
from .context import Reply, RequestContext
from .events import GroupEvent
from .timers import Timers


@dataclass
class Env:
    registry: Registry
    config: CoordinatorConfig
    now_ms: int = 0
    timers: Timers[Callable[[], None]] = field(default_factory=Timers)
    replies: list[Reply] = field(default_factory=list)
    events: list[GroupEvent] = field(default_factory=list)

    def reply(self, ctx: RequestContext, body: Struct) -> None:
        self.replies.append(Reply(ctx.request_id, body))

    def emit(self, event: GroupEvent) -> None:
        self.events.append(event)

    def take_replies(self) -> list[Reply]:
        out, self.replies = self.replies, []
        return out
