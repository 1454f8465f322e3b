"""Each classic API, in each group state, for a known follower: the answer Kafka gives.

One row per state, one column per request; None means the request is parked.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from .harness import REG, E, Harness
from .test_classic_sync import completing

PARKED = None
Answer = E | None


def known_follower(state: str) -> tuple[Harness, str, int]:
    """A group of three in ``state``, and its follower ``c2-2`` (for Empty: after all left).
    In Preparing only the leader has rejoined."""
    h = Harness()
    if state == "Completing":
        ids, gen = completing(h, 3)
        return h, ids[1], gen
    ids, gen = h.stable_group(3)
    if state == "Empty":
        h.leave(*ids)
        gen += 1
    elif state == "Preparing":
        h.join(ids[0], client_id="c1")
    elif state == "Dead":
        h.mark_dead()
    return h, ids[1], gen


def commit(h: Harness, member: str, gen: int) -> int:
    cls = REG["OffsetCommitRequest"].cls
    return h.send("OffsetCommit", 9, group_id="g", generation_id_or_member_epoch=gen,
                  member_id=member, topics=[cls.OffsetCommitRequestTopic(  # type: ignore[attr-defined]
                      name="t", partitions=[cls.OffsetCommitRequestPartition(  # type: ignore[attr-defined]
                          partition_index=0, committed_offset=1)])])


def commit_error(h: Harness, rid: int) -> E:
    return E(h.reply(rid).topics[0].partitions[0].error_code)


def leave_error(h: Harness, rid: int) -> E:
    r = h.reply(rid)
    return E(r.error_code) if r.error_code else E(r.members[0].error_code)


Request = Callable[[Harness, str, int], Answer]


def ask(send: Callable[[Harness, str, int], int],
        read: Callable[[Harness, int], E] = Harness.error) -> Request:
    def run(h: Harness, m: str, gen: int) -> Answer:
        rid = send(h, m, gen)
        return read(h, rid) if h.answered(rid) else PARKED
    return run


REQUESTS: dict[str, Request] = {
    "join-new": ask(lambda h, m, g: h.join(client_id="c9")),
    "join-known": ask(lambda h, m, g: h.join(m, client_id="c2")),
    "sync": ask(lambda h, m, g: h.sync(m, g)),
    "sync-old-gen": ask(lambda h, m, g: h.sync(m, g - 1)),
    "heartbeat": ask(lambda h, m, g: h.heartbeat(m, g)),
    "heartbeat-old-gen": ask(lambda h, m, g: h.heartbeat(m, g - 1)),
    "heartbeat-unknown": ask(lambda h, m, g: h.heartbeat("ghost", g)),
    "commit": ask(lambda h, m, g: commit(h, m, g), commit_error),
    "commit-old-gen": ask(lambda h, m, g: commit(h, m, g - 1), commit_error),
    "commit-simple": ask(lambda h, m, g: commit(h, "", -1), commit_error),
    "leave": ask(lambda h, m, g: h.leave(m), leave_error),
}

N, UM, IG, RIP, CNA, MIR = (E.NONE, E.UNKNOWN_MEMBER_ID, E.ILLEGAL_GENERATION,
                            E.REBALANCE_IN_PROGRESS, E.COORDINATOR_NOT_AVAILABLE,
                            E.MEMBER_ID_REQUIRED)
MATRIX: dict[str, dict[str, Answer]] = {
    "Empty": {"join-new": MIR, "join-known": UM, "sync": UM, "sync-old-gen": UM,
              "heartbeat": UM, "heartbeat-old-gen": UM, "heartbeat-unknown": UM,
              "commit": UM, "commit-old-gen": UM, "commit-simple": N, "leave": UM},
    "Preparing": {"join-new": MIR, "join-known": PARKED, "sync": RIP, "sync-old-gen": IG,
                  "heartbeat": RIP, "heartbeat-old-gen": IG, "heartbeat-unknown": UM,
                  "commit": N, "commit-old-gen": IG, "commit-simple": UM, "leave": N},
    "Completing": {"join-new": MIR, "join-known": N, "sync": PARKED, "sync-old-gen": IG,
                   "heartbeat": N, "heartbeat-old-gen": IG, "heartbeat-unknown": UM,
                   "commit": RIP, "commit-old-gen": IG, "commit-simple": UM, "leave": N},
    "Stable": {"join-new": MIR, "join-known": N, "sync": N, "sync-old-gen": IG,
               "heartbeat": N, "heartbeat-old-gen": IG, "heartbeat-unknown": UM,
               "commit": N, "commit-old-gen": IG, "commit-simple": UM, "leave": N},
    "Dead": {"join-new": CNA, "join-known": CNA, "sync": CNA, "sync-old-gen": CNA,
             "heartbeat": CNA, "heartbeat-old-gen": CNA, "heartbeat-unknown": CNA,
             "commit": CNA, "commit-old-gen": CNA, "commit-simple": CNA, "leave": CNA},
}


@pytest.mark.parametrize("state,request_name,expected",
                         [(s, r, e) for s, row in MATRIX.items() for r, e in row.items()],
                         ids=[f"{s}-{r}" for s, row in MATRIX.items() for r in row])
def test_answer(state: str, request_name: str, expected: Answer) -> None:
    h, member, gen = known_follower(state)
    assert REQUESTS[request_name](h, member, gen) == expected


def test_matrix_is_complete() -> None:
    assert all(set(row) == set(REQUESTS) for row in MATRIX.values())
