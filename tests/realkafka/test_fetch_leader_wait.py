"""``fetch_all`` asks again when the partition's leader is not ready yet (a topic just
created: Metadata can name its leader before that broker serves it, and the Fetch is
answered NOT_LEADER_OR_FOLLOWER; seen in a fresh-clone test run of the Connect seed);
any other error is final. The broker here is a scripted connection."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from fakebroker.realkafka.records import RecordFormatError, fetch_all


class ScriptedConnection:
    """Answers each Fetch with the next partition error code of ``codes``; 0 is an empty,
    caught-up partition."""

    def __init__(self, *codes: int) -> None:
        self.codes, self.sent = list(codes), 0

    async def send(self, body: Any, version: int, **_: Any) -> Any:
        code = self.codes[min(self.sent, len(self.codes) - 1)]
        self.sent += 1
        part = SimpleNamespace(error_code=code, records=b"", high_watermark=0)
        return SimpleNamespace(response=SimpleNamespace(
            error_code=0, responses=[SimpleNamespace(partitions=[part])]))


def fetch(conn: ScriptedConnection, leader_wait_s: float = 10.0) -> list[Any]:
    return asyncio.run(fetch_all(conn, "t", 0, leader_wait_s=leader_wait_s))  # type: ignore[arg-type]


@pytest.mark.parametrize("code", [3, 5, 6])
def test_a_partition_whose_leader_is_not_ready_is_asked_again(code: int) -> None:
    conn = ScriptedConnection(code, code, 0)
    assert fetch(conn) == [] and conn.sent == 3


def test_any_other_error_is_final_at_once() -> None:
    conn = ScriptedConnection(1, 0)  # OFFSET_OUT_OF_RANGE
    with pytest.raises(RecordFormatError, match="partition error 1"):
        fetch(conn)
    assert conn.sent == 1


def test_a_partition_that_never_gets_a_leader_fails_within_the_wait() -> None:
    conn = ScriptedConnection(6)
    with pytest.raises(RecordFormatError, match="partition error 6"):
        fetch(conn, leader_wait_s=0.3)
    assert 2 <= conn.sent <= 10
