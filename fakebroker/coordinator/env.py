"""What every part of a coordinator shares while it handles one input: the virtual time,
the timers, the request being handled and its answer, and the outboxes of the other
replies, the records and the events (``GroupCoordinator`` hands them back as one
``CoordinatorResult`` per input)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..protocol import Registry, Struct
from .config import CoordinatorConfig
from .context import Reply, RequestContext
from .events import GroupEvent
from .reconcile.records import Record
from .timers import Timers


@dataclass
class Env:
    registry: Registry
    config: CoordinatorConfig
    now_ms: int = 0
    timers: Timers[Callable[[], None]] = field(default_factory=Timers)
    replies: list[Reply] = field(default_factory=list)
    events: list[GroupEvent] = field(default_factory=list)
    records: list[Record] = field(default_factory=list)
    handling: int | None = None  # the id of the request being handled
    answer: Struct | None = None  # its answer, once given

    def reply(self, ctx: RequestContext, body: Struct) -> None:
        """Answer the request of ``ctx``: the one being handled, or one parked earlier."""
        if ctx.request_id == self.handling:
            self.answer = body
        else:
            self.replies.append(Reply(ctx.request_id, body))

    def emit(self, event: GroupEvent) -> None:
        self.events.append(event)
