"""Which request a response answers: the one pairing rule of the project.

Kafka answers a connection's requests in the order it read them, and a response carries the
correlation id of its request. So a response answers the earliest still-open request of its
connection with that correlation id (first in, first out: a client that reuses an id still
pairs right), and a connection's close leaves its open requests unanswered. The recorder's
checks, replay, golden annotation, the harness and the pipeline's decode all pair with this;
the pipeline's Spark ingest states the same rule as a window (``n``-th response with an id
answers the ``n``-th request with it).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Iterable, Iterator
from typing import Generic, Protocol, TypeVar

T = TypeVar("T")


class OpenRequests(Generic[T]):
    """Requests awaiting their answers, by connection and correlation id. ``T`` is whatever
    the caller keeps of a request (a transcript event, a decoded frame, a client id)."""

    def __init__(self) -> None:
        self._open: dict[tuple[Hashable, int | None], deque[tuple[int, T]]] = {}
        self._n = 0

    def sent(self, conn: Hashable, correlation_id: int | None, request: T) -> None:
        self._n += 1
        self._open.setdefault((conn, correlation_id), deque()).append((self._n, request))

    def answer(self, conn: Hashable, correlation_id: int | None) -> T | None:
        """The request this response answers, no longer open; None: it answers none."""
        waiting = self._open.get((conn, correlation_id))
        if not waiting:
            return None
        _, request = waiting.popleft()
        if not waiting:
            del self._open[conn, correlation_id]
        return request

    def close(self, conn: Hashable) -> list[T]:
        """The connection closed: its open requests, in the order sent, never answered."""
        gone = [k for k in self._open if k[0] == conn]
        return [r for _, r in sorted((x for k in gone for x in self._open.pop(k)),
                                     key=lambda x: x[0])]

    def unanswered(self) -> list[T]:
        """Every request still open, in the order sent."""
        return [r for _, r in sorted((x for q in self._open.values() for x in q), key=lambda x: x[0])]


class Frame(Protocol):
    """What pairing reads of a transcript event."""

    @property
    def kind(self) -> str: ...  # request | response | close (anything else is ignored)

    @property
    def conn(self) -> int | str: ...

    @property
    def correlation_id(self) -> int | None: ...


F = TypeVar("F", bound=Frame)


def exchanges(events: Iterable[F]) -> Iterator[tuple[F | None, F | None]]:
    """(request, response) of every exchange, as each completes: response None for a
    request its connection's close (or the end) left unanswered, request None for a
    response that answers no open request."""
    pending: OpenRequests[F] = OpenRequests()
    for ev in events:
        if ev.kind == "request":
            pending.sent(ev.conn, ev.correlation_id, ev)
        elif ev.kind == "response":
            yield pending.answer(ev.conn, ev.correlation_id), ev
        elif ev.kind == "close":
            yield from ((r, None) for r in pending.close(ev.conn))
    yield from ((r, None) for r in pending.unanswered())


def request_of(events: Iterable[F]) -> dict[int, F]:
    """Each answered response's request, by the response's ``id()``."""
    return {id(resp): req for req, resp in exchanges(events) if req is not None and resp is not None}


def response_of(events: Iterable[F]) -> dict[int, F]:
    """Each answered request's response, by the request's ``id()``."""
    return {id(req): resp for req, resp in exchanges(events) if req is not None and resp is not None}
