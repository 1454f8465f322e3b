"""``produce_batch`` sends a batch again only when the broker refused it without appending
it (a just-created partition whose leadership the broker has not taken up answers
NOT_LEADER_OR_FOLLOWER: seen once in a full test run); any other error is final. The
broker here is a scripted connection: what is tested is the decision on each answer."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from fakebroker.realkafka.group_log import GroupLogError, produce_batch


class ScriptedConnection:
    """Answers each Produce with the next error code of ``codes`` (base offset 7 on 0)."""

    def __init__(self, *codes: int) -> None:
        self.codes, self.sent = list(codes), 0

    async def send(self, body: Any, version: int, **_: Any) -> Any:
        code = self.codes[min(self.sent, len(self.codes) - 1)]
        self.sent += 1
        part = SimpleNamespace(error_code=code, base_offset=7 if code == 0 else -1, error_message=None)
        return SimpleNamespace(response=SimpleNamespace(
            responses=[SimpleNamespace(partition_responses=[part])]))


def produce(conn: ScriptedConnection, timeout_ms: int = 30_000) -> int:
    return asyncio.run(produce_batch(conn, "t", 0, b"batch", timeout_ms=timeout_ms))  # type: ignore[arg-type]


def test_a_partition_without_its_leader_yet_is_tried_again_until_it_takes_the_batch() -> None:
    conn = ScriptedConnection(6, 6, 0)
    assert produce(conn) == 7 and conn.sent == 3


@pytest.mark.parametrize("code", [2, 10, 87])  # CORRUPT_MESSAGE, MESSAGE_TOO_LARGE, INVALID_RECORD
def test_any_other_error_is_final_at_once(code: int) -> None:
    conn = ScriptedConnection(code, 0)
    with pytest.raises(GroupLogError, match=f"error {code}"):
        produce(conn)
    assert conn.sent == 1


def test_a_partition_that_never_gets_a_leader_fails_within_the_timeout() -> None:
    conn = ScriptedConnection(6)
    with pytest.raises(GroupLogError, match="error 6"):
        produce(conn, timeout_ms=300)
    assert 2 <= conn.sent <= 10
