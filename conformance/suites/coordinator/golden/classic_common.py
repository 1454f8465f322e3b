"""Golden scenarios of the classic group APIs, shared steps: for every requirement a transcript
shows, the shortest request sequence that exercises it, with the outcome the requirement
states checked as it runs.

Timeouts are kept short (sessions at the 6 s minimum, rebalance timeouts of a few seconds,
500 ms or more between a deadline and the next request) so that the transcripts also replay
on a real-time coordinator; the one that needs Kafka's fixed 5-minute new-member timeout is
virtual-only.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from fakebroker.protocol.error_codes import ErrorCode as E
from fakebroker.protocol import default_registry
from .registry import golden
from fakebroker.testing.client import Pending, ScriptedClient
from .session import Session

MIN_SESSION = 6000  # group.min.session.timeout.ms's default: the shortest a client may ask
EVENTS = "events"  # the golden broker's topic (3 partitions)
EVENTS_ID = uuid.uuid5(uuid.NAMESPACE_URL, f"fakebroker-topic:{EVENTS}")
DELAY = {"initial_rebalance_delay_ms": 3000}


def connect_metadata(url: str, offset: int = 5) -> bytes:
    """Connect's worker metadata (v1: url, config offset, no allocation yet)."""
    return default_registry()["ConnectProtocolMetadata"].encode_versioned(
        default_registry()["ConnectProtocolMetadata"].new(url=url, config_offset=offset, allocation=None), 1)


CONNECT = (("sessioned", connect_metadata("http://w:8083/")),
           ("compatible", connect_metadata("http://w:8083/")),
           ("default", connect_metadata("http://w:8083/")))


# ---------------------------------------------------------------------------- helpers

async def first_member(s: Session, g: str, c: ScriptedClient, **kw: object) -> str:
    """A group of one: the two-step join and the leader's sync. Stable, generation 1."""
    member, parked = await c.new_member(g, **kw)
    j = await s.result(parked)
    s.check((j.error_code, j.generation_id, j.leader) == (0, 1, member), f"first join: {j}")
    r = await c.sync(g, member, 1, assignments={member: b"A1"}, protocol_name=j.protocol_name)
    s.check((r.error_code, r.assignment) == (0, b"A1"), f"first sync: {r}")
    return member


async def static_member(s: Session, g: str, c: ScriptedClient, instance: str) -> str:
    """A static member alone in its group (joins at once, no MEMBER_ID_REQUIRED)."""
    j = await c.join(g, instance=instance)
    s.check(j.error_code == 0 and j.member_id.startswith(instance + "-"), f"static join: {j}")
    r = await c.sync(g, j.member_id, 1, instance=instance, assignments={j.member_id: b"S1"})
    s.check(r.error_code == 0, f"static sync: {r}")
    return str(j.member_id)


async def second_member_joined(s: Session, g: str, w1: ScriptedClient, w2: ScriptedClient,
                               **kw: object) -> tuple[str, str, Any, Any]:
    """w1 forms generation 1 alone, then w2 joins: w1 learns of the rebalance from its
    heartbeat and rejoins; generation 2 is answered to both (not yet synced). Returns both
    member ids and both JoinGroup answers."""
    m1 = await first_member(s, g, w1, **kw)
    m2, parked = await w2.new_member(g, **kw)
    s.check(s.parked(parked), "the newcomer waits for the rebalance")
    hb = await w1.heartbeat(g, m1, 1)
    s.check(hb.error_code == E.REBALANCE_IN_PROGRESS, f"w1 heartbeat: {hb}")
    j1 = await w1.join(g, m1, **kw)
    j2 = await s.result(parked)
    s.check((j1.generation_id, j2.generation_id, j1.leader) == (2, 2, m1), f"gen 2: {j1} {j2}")
    return m1, m2, j1, j2


async def follower_waiting(s: Session, g: str, w1: ScriptedClient,
                           w2: ScriptedClient) -> tuple[str, str, Pending]:
    """w1 and w2 joined at generation 2, w1 leading and not yet synced; w2's SyncGroup waits
    for the leader's. Returns both member ids and the parked SyncGroup."""
    m1, m2, _, _ = await second_member_joined(s, g, w1, w2)
    parked = await w2.sync_later(g, m2, 2)
    s.check(s.parked(parked), "the follower waits for the leader")
    return m1, m2, parked


async def two_members(s: Session, g: str, w1: ScriptedClient, w2: ScriptedClient, **kw: object) -> tuple[str, str]:
    """w1 and w2 in a Stable group, generation 2, w1 leading."""
    m1, m2, j1, _ = await second_member_joined(s, g, w1, w2, **kw)
    name = j1.protocol_name
    follower = await w2.sync_later(g, m2, 2, protocol_name=name)
    r1 = await w1.sync(g, m1, 2, assignments={m1: b"A1", m2: b"A2"}, protocol_name=name)
    r2 = await s.result(follower)
    s.check((r1.assignment, r2.assignment) == (b"A1", b"A2"), f"gen 2 syncs: {r1} {r2}")
    return m1, m2


async def joined_not_synced(s: Session, g: str, c: ScriptedClient) -> str:
    """A group of one in CompletingRebalance: joined, no SyncGroup yet."""
    member, parked = await c.new_member(g)
    j = await s.result(parked)
    s.check(j.error_code == 0 and j.generation_id == 1, f"join: {j}")
    return member


async def rebalancing(s: Session, g: str, c: ScriptedClient) -> str:
    """A group of one, Stable, that a second member (w2) has just asked to join."""
    member = await first_member(s, g, c)
    await (await s.client("w2")).new_member(g)
    return member


SETUPS: dict[str, Callable[[Session, str, ScriptedClient], Awaitable[str]]] = {
    "member": first_member, "joined": joined_not_synced, "rebalancing": rebalancing,
    "static": lambda s, g, c: static_member(s, g, c, "inst-1"),
}


def probe(id: str, api: str, expect: str, title: str,
          send: Callable[[ScriptedClient, str, str], Awaitable[Any]], *, setup: str | None = None,
          by: str | None = None, answer: Callable[[Any], Any] = lambda r: r.error_code,
          want: Any = None, group: bool = True, **golden_kw: Any) -> None:
    """Register the scenario of a requirement one request shows. After ``setup`` (one of SETUPS, run
    by client w1 in the scenario's group), client ``by`` (w1 itself if None) sends
    ``send(client, group, the setup's member id)``; ``answer(response)`` must equal ``want``
    (by default the code of the error ``expect`` names). ``group=False``: the request names
    no group of the scenario's (an empty group id), so none is bound."""
    expected = E[expect] if want is None else want

    async def scenario(s: Session) -> None:
        g = s.group() if group else ""
        c = await s.client("w1" if setup is not None else by or "w1")
        member = await SETUPS[setup](s, g, c) if setup is not None else ""
        if setup is not None and by is not None:
            c = await s.client(by)
        r = await send(c, g, member)
        s.check(answer(r) == expected, f"{r}")

    golden(id, api, expect, title, **golden_kw)(scenario)


def refused_alike(api: str, request: Callable[..., Awaitable[Any]], ids: dict[str, str]) -> None:
    """Register the refusals Heartbeat and SyncGroup share: each names a group, a member and its
    generation, which the coordinator checks alike. ``request(client, group, member,
    generation, ...)`` sends ``api``; ``ids`` names each refusal's transcript, for all of them."""
    refusals: dict[str, tuple[str, str, dict[str, Any], Callable[[ScriptedClient, str, str], Awaitable[Any]]]] = {
        "empty-group": ("INVALID_GROUP_ID", "with an empty group id", {"group": False},
                        lambda c, g, m: request(c, "", "w1-x", 1)),
        "no-group": ("UNKNOWN_MEMBER_ID", "for a group that does not exist", {},
                     lambda c, g, m: request(c, g, "w1-x", 1)),
        "unknown-member": ("UNKNOWN_MEMBER_ID", "from a member the group does not know",
                           {"setup": "member", "by": "w2"},
                           lambda c, g, m: request(c, g, "w2-not-a-member", 1)),
        # the next generation: a previous one may be -1
        "other-generation": ("ILLEGAL_GENERATION", "with a generation other than the group's",
                             {"setup": "member"}, lambda c, g, m: request(c, g, m, 2)),
        "fenced-instance": ("FENCED_INSTANCE_ID",
                            "naming a static member's group.instance.id with another member id",
                            {"setup": "static", "by": "w2"},
                            lambda c, g, m: request(c, g, "inst-1-impostor", 1, instance="inst-1")),
    }
    if set(ids) != set(refusals):
        raise ValueError(f"{api}: ids for {sorted(ids)}, refusals are {sorted(refusals)}")
    for key, (expect, what, how, send) in refusals.items():
        probe(ids[key], api, expect, f"A {api} {what} is refused with {expect}.", send=send, **how)
