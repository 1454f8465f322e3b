"""What one input to the coordinator produced, handed back whole (as the ``CoordinatorResult``
of Apache Kafka's group coordinator): the answer to the request handled, the answers to
requests parked earlier, the records written, the events and the next deadline."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from ..protocol import Struct
from .context import Reply
from .events import GroupEvent
from .reconcile.records import Record


class CoordinatorResult(NamedTuple):  # (a tuple: made once per request, cheaply)
    #: The answer to the request handled, when it is ready now; None while it is parked (a
    #: JoinGroup waiting for its round), or for a tick. It comes later in ``replies`` of
    #: the input that completes it.
    reply: Struct | None
    #: Answers to requests parked earlier, in the order they were given.
    replies: Sequence[Reply]
    #: The records the connect and consumer groups wrote in this input, in order (already
    #: appended to their store: a group's state and its log never differ).
    records: Sequence[Record]
    #: What happened, in order (``events.py``); events of work done outside an input (a
    #: group restored from records) come with the next input's.
    events: Sequence[GroupEvent]
    #: When to call ``GroupCoordinator.tick`` next (None: no timer is set).
    next_deadline: int | None
