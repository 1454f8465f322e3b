"""The one pairing rule: a response answers the earliest open request of its connection
with its correlation id; a close leaves the connection's open requests unanswered."""

from __future__ import annotations

from dataclasses import dataclass

from fakebroker.exchange.pairing import OpenRequests, exchanges, request_of, response_of


@dataclass
class Ev:
    kind: str
    conn: int
    correlation_id: int | None = None
    name: str = ""


def test_a_response_answers_the_earliest_open_request_with_its_id() -> None:
    open_: OpenRequests[str] = OpenRequests()
    open_.sent(1, 7, "first")
    open_.sent(1, 7, "again")  # a client that reuses an id: answered in order
    open_.sent(2, 7, "other connection")
    assert open_.answer(1, 7) == "first"
    assert open_.answer(1, 7) == "again"
    assert open_.answer(1, 7) is None
    assert open_.answer(2, 8) is None
    assert open_.unanswered() == ["other connection"]


def test_a_close_ends_its_connections_open_requests_in_the_order_sent() -> None:
    open_: OpenRequests[str] = OpenRequests()
    for conn, cid, name in [(1, 3, "a"), (2, 1, "b"), (1, 1, "c")]:
        open_.sent(conn, cid, name)
    assert open_.close(1) == ["a", "c"]
    assert open_.answer(1, 3) is None
    assert open_.unanswered() == ["b"]


def test_exchanges_of_a_transcript_pair_orphans_and_unanswered() -> None:
    events = [Ev("request", 1, 1, "q1"), Ev("request", 1, 2, "q2"), Ev("response", 1, 2, "p2"),
              Ev("response", 1, 9, "orphan"), Ev("request", 2, 1, "q3"), Ev("close", 1),
              Ev("response", 1, 1, "late"), Ev("request", 3, 1, "q4")]
    got = [(q.name if q else None, p.name if p else None) for q, p in exchanges(events)]
    assert got == [("q2", "p2"), (None, "orphan"), ("q1", None), (None, "late"), ("q3", None), ("q4", None)]
    assert {e.name for e in events if id(e) in response_of(events)} == {"q2"}
    assert [q.name for q in request_of(events).values()] == ["q2"]
