"""Truthful scripted Connect workers for the worker suite's KIP-415 leader cases: each one
reports the work it owns (v1/v2 allocation) at the config offset of the worker under test,
releases what it is told to revoke, and rejoins when the worker under test starts a round.

    w, first = await lead_alone(ctx)                      # the worker leads, owning all work
    peers = [await Peer.join(ctx, n, first) for n in ("p1", "p2")]
    rounds = await settle(ctx, w, peers, first.sync)       # rounds until no revocation
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fakebroker.protocol import DecodeError

from fakebroker.connect.embedded import (ASSIGNMENT, METADATA, PROTOCOL_VERSIONS, Unit, assignment_bytes,
                                      connect_protocols, units_of)
from fakebroker.testing.client import Pending
from fakebroker.testing.member import ScriptedMember
from ...harness.outcomes import Broken, Violation
from ...harness.worker import Seen, WorkerContext, WorkerProcess

PEER_SESSION_MS = 30_000  # scripted peers outlive any scenario without heartbeating


def decode_assignment(data: bytes, what: str) -> tuple[int, Any]:
    try:
        return ASSIGNMENT.decode_versioned(data)
    except DecodeError as e:
        raise Violation(what, "a strictly decodable Connect assignment", str(e)) from None


@dataclass
class Lead:
    """The worker under test leading its group alone: what it sent and was given."""

    join: Seen
    sync: Seen
    protocol: str
    config_offset: int
    all_units: set[Unit]          # what the first leader assigned itself: every unit


def _metadata(join: Seen) -> Any:
    """The worker's metadata for the protocol its group selected."""
    protocol = join.response.protocol_name
    return METADATA.decode_versioned(bytes(next(p.metadata for p in join.request.protocols
                                                if p.name == protocol)))[1]


async def lead_alone(ctx: WorkerContext, *, owning_nothing: bool = False, **kw: Any) -> tuple[WorkerProcess, Lead]:
    """The worker alone in a new group: it leads generation 1 and takes every unit. With
    ``owning_nothing`` its SyncGroup is answered with an empty assignment instead (the
    coordinator never sees it), so it owns nothing while it believes it handed out all."""
    w = await ctx.start_worker(**kw)
    if owning_nothing:
        answer = ctx.recorder.registry["SyncGroupResponse"]

        def empty(req: Any) -> Any:
            join = [s for s in ctx.seen(w, "JoinGroup") if s.ok][-1]
            md = _metadata(join)
            return answer.new(throttle_time_ms=0, error_code=0, protocol_type="connect",
                              protocol_name=join.response.protocol_name, assignment=assignment_bytes(
                                  PROTOCOL_VERSIONS[join.response.protocol_name], leader=req.member_id,
                                  leader_url=md.url, config_offset=md.config_offset))
        ctx.recorder.forge(w.worker_id, "SyncGroup", empty)
        ctx.note("answering the worker's first SyncGroup with an empty assignment (it owns nothing)")
    sync = await ctx.worker_synced(w)
    join = [s for s in ctx.seen(w, "JoinGroup") if s.ok and s.index < sync.index][-1]
    (a,) = sync.request.assignments
    _, asg = decode_assignment(bytes(a.assignment), "the first leader's own assignment")
    every = units_of(asg.assignment)
    if not every:
        raise Violation("work the first worker assigns itself (setup)", "every unit (non-empty)", [])
    return w, Lead(join, sync, join.response.protocol_name, _metadata(join).config_offset, every)


@dataclass
class Peer:
    member: ScriptedMember
    protocol: str
    config_offset: int
    owned: set[Unit] = field(default_factory=set)

    @property
    def name(self) -> str:
        return self.member.name

    @classmethod
    async def join(cls, ctx: WorkerContext, name: str, lead: Lead, owned: set[Unit] = frozenset()) -> Peer:  # type: ignore[assignment]
        """A new peer with a member id (not yet in a round), claiming ``owned``."""
        m = await ctx.member(name, session_timeout_ms=PEER_SESSION_MS)
        p = cls(m, lead.protocol, lead.config_offset, set(owned))
        await m.obtain_member_id(protocols=p.protocols())
        return p

    def protocols(self) -> list[tuple[str, bytes]]:
        return connect_protocols(self.name, (self.protocol,), owned=self.owned or None,
                                 config_offset=self.config_offset)

    def submit_join(self) -> Pending:
        return self.member.submit_join(protocols=self.protocols())

    def take(self, data: bytes) -> Any:
        v, a = decode_assignment(bytes(data), f"{self.name}'s assignment")
        if a.error != 0:
            raise Violation(f"{self.name}'s assignment (setup)", "error 0", a.error)
        if v == 0:
            self.owned = units_of(a.assignment)
        else:
            self.owned = (self.owned - units_of(a.revoked)) | units_of(a.assignment)
        return a


@dataclass
class Round:
    """One completed round led by the worker: its SyncGroup, what it gave each member
    (decoded, by member id), what each member reported owning as the round began, and
    each member's work once it applied its assignment."""

    sync: Seen
    given: dict[str, Any]
    before: dict[str, set[Unit]]
    after: dict[str, set[Unit]]

    @property
    def t(self) -> float:
        """When the leader sent its assignments (its clock for the delay)."""
        return self.sync.t_request

    @property
    def revoked(self) -> set[tuple[str, Unit]]:
        return {(m, u) for m, a in self.given.items() for u in units_of(getattr(a, "revoked", None))}

    @property
    def delays(self) -> dict[str, int]:
        return {m: getattr(a, "scheduled_delay", 0) for m, a in self.given.items()}


async def play_round(ctx: WorkerContext, w: WorkerProcess, peers: list[Peer], after: Seen, *,
                     wait_for_worker: bool = True, within_ms: int | None = None) -> Round:
    """One round with the worker as leader: once the worker rejoined (or at once, when the
    peers' joins start the round), every peer rejoins with its allocation and syncs."""
    # Joins on separate connections are handled in no set order: members of the group rejoin
    # only once the worker has (the round is open), or a stable group would answer them with
    # the current generation at once. New peers' joins are what opens a round.
    openers = [] if wait_for_worker else [p for p in peers if p.member.generation < 0]
    followers = [p for p in peers if p not in openers]
    ctx.recorder.sync_after_peers(w.worker_id, {p.name for p in peers})
    pending = [p.submit_join() for p in openers]
    if followers:
        await ctx.next_request(w, "JoinGroup", after=after, answered=False, within_ms=within_ms or 20_000,
                               what="the worker's rejoin for the next round",
                               keep_alive=[p.member for p in followers])
    pending += [p.submit_join() for p in followers]
    peers = openers + followers
    if not await ctx.until_answered(pending, ctx.rebalance_ms):
        raise Violation("a round with the worker (setup)", "every peer's JoinGroup answered", "parked")
    for p, q in zip(peers, pending):
        ctx.expect_error(p.member.take_join(await q.response()), "NONE", f"{p.name}'s JoinGroup (setup)")
    syncs = [p.member.submit_sync() for p in peers]
    sync = await ctx.worker_synced(w, after=after)
    join = [s for s in ctx.seen(w, "JoinGroup") if s.ok and s.index < sync.index][-1]
    if join.response.leader != join.response.member_id:
        raise Broken(f"the worker is not the leader of the round (leader {join.response.leader!r})")
    before: dict[str, set[Unit]] = {}
    for m in join.response.members:
        _, md = METADATA.decode_versioned(bytes(m.metadata))
        alloc = getattr(md, "allocation", None)
        before[m.member_id] = units_of(decode_assignment(bytes(alloc), "allocation")[1].assignment) if alloc else set()
    given = {a.member_id: decode_assignment(bytes(a.assignment), f"the leader's assignment for {a.member_id}")[1]
             for a in sync.request.assignments}
    for p, s in zip(peers, syncs):
        r = await s.response()
        ctx.expect_error(r, "NONE", f"{p.name}'s SyncGroup (setup)")
        p.take(r.assignment)
    after_work = {m: (before.get(m, set()) - units_of(getattr(a, "revoked", None))) | units_of(a.assignment)
                  for m, a in given.items()}
    ctx.note("round: " + "; ".join(
        f"{m}: owned {sorted(before.get(m, set()))}, assigned {sorted(units_of(a.assignment))}, "
        f"revoked {sorted(units_of(getattr(a, 'revoked', None)))}, delay {getattr(a, 'scheduled_delay', 0)}"
        for m, a in given.items()))
    return Round(sync, given, before, after_work)


async def settle(ctx: WorkerContext, w: WorkerProcess, peers: list[Peer], after: Seen, *,
                 max_rounds: int = 4) -> list[Round]:
    """Peers that just got their member ids start a round by joining; rounds follow while the
    leader revokes. Returns the rounds; a Violation if the group does not converge (a
    round without revocations) within ``max_rounds``."""
    rounds = [await play_round(ctx, w, peers, after, wait_for_worker=False)]
    while rounds[-1].revoked:
        if len(rounds) >= max_rounds:
            raise Violation("rounds until the leader revokes nothing more",
                            f"at most {max_rounds}", f"still revoking after {len(rounds)}")
        rounds.append(await play_round(ctx, w, peers, rounds[-1].sync))
    return rounds


def second_owners(r: Round) -> list[str]:
    """Every way ``r`` gives a unit to a member while another one owns it or keeps it."""
    out = []
    for m, a in r.given.items():
        for other, owned in r.before.items():
            if other != m:
                out += [f"{u} assigned to {m} while {other} owns it" for u in sorted(units_of(a.assignment) & owned)]
    members = sorted(r.after)
    for i, m in enumerate(members):
        for other in members[i + 1:]:
            out += [f"{u} left with both {m} and {other}" for u in sorted(r.after[m] & r.after[other])]
    return out


def unit_names(units: set[Unit]) -> set[str]:
    """Connect's unit names as the exchanges and the invariants read them (``conn``, ``conn-3``)."""
    return {c if t == -1 else f"{c}-{t}" for c, t in units}


async def until_settled(ctx: WorkerContext, w: WorkerProcess, peers: list[Peer], rounds: list[Round], *,
                        max_rounds: int = 6) -> list[Round]:
    """Rounds the worker leads after ``rounds`` while the last one revoked work or set a
    ScheduledDelay (a leader may defer work or a revocation behind one; the worker rejoins
    when it expires): the group has settled when a round does neither."""
    while rounds[-1].revoked or max(rounds[-1].delays.values(), default=0) > 0:
        if len(rounds) >= max_rounds:
            raise Violation("rounds until the group settles (no revocation, no ScheduledDelay)",
                            f"at most {max_rounds}", f"still revoking or delaying after {len(rounds)}")
        delay = max(rounds[-1].delays.values(), default=0)
        rounds.append(await play_round(ctx, w, peers, rounds[-1].sync, within_ms=delay + 20_000))
    return rounds
