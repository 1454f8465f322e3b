"""What a case works with: the target, its requirement, a fresh group, the clock, scripted
members, and checks that turn a difference into a ``Violation`` (``CaseContext``). The two
suites' contexts are its siblings: ``CoordinatorContext`` here (the scripted members are the
workers, the target the coordinator) and ``WorkerContext`` (``harness.worker``: the fake
broker is the coordinator, scripted members are the worker's peers).

    async def case(ctx: CoordinatorContext) -> None:
        a, b = ctx.member("a"), ctx.member("b")
        gen = await ctx.form_group([a, b])
        ctx.expect_error(await a.heartbeat(generation=gen.generation + 1), "ILLEGAL_GENERATION",
                         "Heartbeat with the next generation")
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from fakebroker.client import ClientError
from fakebroker.negotiation import VersionUnavailable, refusal
from fakebroker.protocol import default_registry
from fakebroker.protocol.error_codes import ErrorCode, error_text
from fakebroker.script.recorder import Recorder
from fakebroker.script.recorded import RecordedConnection
from fakebroker.testing.client import Pending
from fakebroker.testing.member import ScriptedMember
from fakebroker.testing.session import ScriptedSession

from ..catalogue.requirements import Requirement
from .target import Target
from .clock import CaseClock
from .outcomes import Broken, NotApplicable, Violation

REBALANCE_IN_PROGRESS = ErrorCode.REBALANCE_IN_PROGRESS.value
UNSUPPORTED_VERSION = ErrorCode.UNSUPPORTED_VERSION.value


@dataclass
class Generation:
    """One completed join + sync round, as the members saw it."""

    generation: int
    leader: str
    protocol: str | None
    joins: dict[str, Any]          # member name -> JoinGroup response
    syncs: dict[str, Any] = field(default_factory=dict)  # member name -> SyncGroup response


class CaseContext(ScriptedSession):
    """The case's scripted session (``fakebroker.testing``): its clients' connections are
    recorded into the case's transcript, and a request refused or never answered is the
    target's violation."""

    def __init__(self, target: Target, requirement: Requirement, bootstrap: str,
                 clock: CaseClock, recording: Recorder) -> None:
        super().__init__(bootstrap, default_registry(), f"{requirement.id.lower()}-{uuid.uuid4().hex[:8]}")
        self.target = target
        self.requirement = requirement
        self.clock = clock
        self.recording = recording  # the case's transcript: every member's exchanges
        self.group_id = self.token
        self.members: list[ScriptedMember] = []
        self.notes: list[str] = []
        t = target.timing
        self.session_ms = t.session_timeout_ms
        self.rebalance_ms = t.rebalance_timeout_ms
        self.initial_delay_ms = t.initial_rebalance_delay_ms
        self.group_log_bootstrap: str | None = None  # where [group_log]'s topic is read (sessions)
        self.needs = requirement.version_needs
        self.who = requirement.id
        self.caps = dict(target.max_versions)

    # ---------------------------------------------------------------- members

    async def open(self, client_id: str) -> RecordedConnection:
        host, _, port = self.bootstrap.rpartition(":")
        # On a virtual clock nothing the suite waits for needs real time: a short bound
        # keeps a target that never answers from costing more than a few seconds.
        timeout = 3.0 if self.clock.virtual else self.wait_s(10_000)
        self.begin_transcript()
        conn = RecordedConnection(host, int(port), name=client_id, recorder=self.recording,
                                  now_ms=self.clock.now_ms, client_id=client_id, timeout_s=timeout)
        try:
            await conn.connect()
        except ClientError as e:
            raise Broken(f"cannot reach the target at {self.bootstrap}: {e}") from None
        return conn

    def begin_transcript(self) -> None:
        """The transcript's header (once): the target's address and the case's clock."""
        host, _, port = self.bootstrap.rpartition(":")
        self.recording.begin(host=host, port=int(port), node_id=None,
                             clock="virtual" if self.clock.virtual else "real")

    async def member(self, name: str, **kw: Any) -> ScriptedMember:
        kw.setdefault("session_timeout_ms", self.session_ms)
        kw.setdefault("rebalance_timeout_ms", self.rebalance_ms)
        m = ScriptedMember(await self.client(name), kw.pop("group_id", self.group_id), **kw)
        self.members.append(m)
        return m

    # ---------------------------------------------------------------- the session's policy

    def no_versions(self, error: ClientError) -> None:
        raise Broken(f"the target at {self.bootstrap} answered no ApiVersions: {error}") from None

    def unavailable(self, error: VersionUnavailable) -> None:
        raise NotApplicable(str(error)) from None

    def send_failed(self, pending: Pending, error: ClientError) -> None:
        if pending.client.conn.peer_closed:
            self.refused(pending.client.last or pending, "closed the connection after")
        raise Violation(f"{pending.client.client_id}: send {pending.api}", "an open connection",
                        str(error)) from None

    def no_answer(self, pending: Pending, error: ClientError) -> Any:
        if pending.client.conn.peer_closed:
            self.refused(pending, "closed the connection after")
        raise Violation(f"{pending.client.client_id}: {pending.api} response", "a response",
                        str(error)) from None

    def answered(self, pending: Pending, response: Any) -> Any:
        if getattr(response, "error_code", None) == UNSUPPORTED_VERSION:
            self.refused(pending, "answered UNSUPPORTED_VERSION to")
        return response

    def refused(self, pending: Pending, how: str) -> None:
        """A broker that refused a request is not judged on the requirement: NOT-APPLICABLE
        when the version was outside what it advertised, else BROKEN (fakebroker.negotiation)."""
        outside, reason = refusal(pending.client.ranges, pending.api, pending.version, how)
        raise (NotApplicable if outside else Broken)(f"{reason} ({pending.client.client_id})")

    def unexpected(self, what: str, expected: Any, actual: Any) -> None:
        raise Violation(what, expected, actual)

    def wait_s(self, ms: int) -> float:
        """A bounded real wait for ``ms`` of target time, with slack for scheduling."""
        return ms * self.target.timing.wait_scale / 1000 + 5.0

    # ---------------------------------------------------------------- time

    async def advance(self, ms: int, *, keep_alive: Sequence[ScriptedMember] = (),
                      step_ms: int | None = None) -> None:
        """Let ``ms`` pass, heartbeating the ``keep_alive`` members that are idle between
        steps so their sessions do not expire."""
        step = step_ms or max(1, min(ms, self.session_ms // 4))
        left = ms
        while left > 0:
            d = min(step, left)
            await self.clock.advance(d)
            left -= d
            for m in keep_alive:
                if m.idle and m.member_id:
                    await m.heartbeat()

    async def until_answered(self, pending: Sequence[Pending], within_ms: int, *,
                             keep_alive: Sequence[ScriptedMember] = (),
                             step_ms: int | None = None) -> bool:
        """Let time pass in steps until every request is answered; False if some are still
        parked after ``within_ms`` of target time."""
        step = step_ms or max(1, min(self.session_ms // 4, within_ms or 1))
        spent = 0
        while True:
            await asyncio.sleep(0.02 if self.clock.virtual else 0)
            if all(p.done() for p in pending):
                return True
            if spent >= within_ms:
                return await self._grace(pending)
            d = min(step, within_ms - spent)
            await self._step(pending, d, keep_alive)
            spent += d

    async def _grace(self, pending: Sequence[Pending]) -> bool:
        """A bounded real-time grace for answers already in flight (the target, even on a
        virtual clock, runs in another thread or process)."""
        await asyncio.wait([p.future for p in pending if not p.done()],
                           timeout=0.3 if self.clock.virtual else 2.0)
        return all(p.done() for p in pending)

    async def _step(self, pending: Sequence[Pending], ms: int,
                    keep_alive: Sequence[ScriptedMember]) -> None:
        """``ms`` of target time (waking early on a real clock once every answer is in),
        then a heartbeat from each idle ``keep_alive`` member."""
        if self.clock.virtual:
            await self.advance(ms, keep_alive=[m for m in keep_alive if m.idle], step_ms=ms)
            return
        await asyncio.wait([p.future for p in pending if not p.done()],
                           timeout=ms * self.target.timing.wait_scale / 1000)
        for m in keep_alive:
            if m.idle and m.member_id:
                await m.heartbeat()

    # ---------------------------------------------------------------- scenarios

    async def join_all(self, members: Sequence[ScriptedMember], *, version: int | None = None,
                       new: bool = True, keep_alive: Sequence[ScriptedMember] = (),
                       **join_kw: Any) -> Generation:
        """Every member (re)joins; waits for the join phase to complete (the initial delay of
        a new group included). New members first get their id through MEMBER_ID_REQUIRED.

        Joins travel on separate connections, so the coordinator may handle them in any
        order: with no initial delay it completes a generation with the first member alone,
        and a follower rejoining a Stable group before the leader does is answered at once
        with the current generation. Like a real client, a member answered while others
        are still parked heartbeats, and rejoins when told REBALANCE_IN_PROGRESS; the
        result is the generation in which every member was answered."""
        pending: list[Pending] = []
        for m in members:
            if new and not m.member_id:
                pending.append(await self.first_join(m, version, **join_kw))
            else:
                pending.append(m.submit_join(version, **join_kw))
        budget = self.initial_delay_ms + max(m.rebalance_timeout_ms for m in members)
        step = max(1, min(self.initial_delay_ms or 500, 1000))
        spent = 0
        while not all(p.done() for p in pending):
            if spent >= budget and not await self._grace(pending):
                raise Violation("join phase", f"every JoinGroup answered within {budget} ms",
                                f"{sum(not p.done() for p in pending)} still parked")
            await self._step(pending, step, keep_alive)
            spent += step
            if all(p.done() for p in pending):
                break
            for i, (m, p) in enumerate(zip(members, pending)):
                if p.done() and m.idle:
                    r = m.take_join(await p.response())
                    if r.error_code == 0 and (await m.heartbeat()).error_code == REBALANCE_IN_PROGRESS:
                        pending[i] = m.submit_join(version, **join_kw)
        joins = {}
        for m, p in zip(members, pending):
            joins[m.name] = m.take_join(await p.response())
        for m in members:
            self.expect_error(joins[m.name], "NONE", f"{m.name}'s JoinGroup")
        first = joins[members[0].name]
        return Generation(first.generation_id, first.leader, first.protocol_name, joins)

    async def first_join(self, m: ScriptedMember, version: int | None = None, **join_kw: Any) -> Pending:
        """A new member's join: at v4+ a dynamic member is first told MEMBER_ID_REQUIRED
        (KIP-394) and rejoins with the id given; a broker that admits it at once (or holds
        that first join) has it as the member's join, noted (CLS-JOIN-01 judges KIP-394, the
        case using this its own requirement). The join, pending or answered."""
        v = m.client.version("JoinGroup", version)
        if v < 4 or m.instance_id is not None:
            return m.submit_join(v, **join_kw)
        first = m.submit_join(v, **{**join_kw, "member_id": ""})
        if not await self.until_answered([first], 0):
            self.note(f"{m.name}: JoinGroup v{v} without a member id held (no MEMBER_ID_REQUIRED)")
            return first
        r = m.take_join(await first.response())
        if r.error_code == ErrorCode.MEMBER_ID_REQUIRED and r.member_id:
            return m.submit_join(v, **join_kw)
        if r.error_code == 0:
            self.note(f"{m.name}: JoinGroup v{v} without a member id admitted at once (no MEMBER_ID_REQUIRED)")
            return first
        raise Violation(f"{m.name}: JoinGroup v{v} without a member id",
                        "MEMBER_ID_REQUIRED with a member id, or admitted",
                        f"{error_text(r.error_code, self.target.error_codes)}, member id {r.member_id!r}")

    async def sync_all(self, gen: Generation, members: Sequence[ScriptedMember], *,
                       assignments: dict[str, bytes] | None = None,
                       version: int | None = None) -> Generation:
        """The leader syncs with ``assignments`` (member id -> bytes; default: b"<name>"),
        followers sync too; waits for every answer."""
        leader = next((m for m in members if m.member_id == gen.leader), None)
        if leader is None:
            raise Violation("leader", "one of the joined members",
                            f"{gen.leader!r} not among {[m.member_id for m in members]}")
        given = assignments if assignments is not None else {
            m.member_id: f"assignment-of-{m.name}".encode() for m in members}
        pending = [m.submit_sync(version) for m in members if m is not leader]
        pending.append(leader.submit_sync(version, assignments=given))
        ok = await self.until_answered(pending, self.rebalance_ms)
        if not ok:
            raise Violation("sync phase", "every SyncGroup answered once the leader synced",
                            f"{sum(not p.done() for p in pending)} still parked")
        order = [m for m in members if m is not leader] + [leader]
        for m, p in zip(order, pending):
            gen.syncs[m.name] = await p.response()
        return gen

    async def form_group(self, members: Sequence[ScriptedMember], *, version: int | None = None,
                         assignments: dict[str, bytes] | None = None, **join_kw: Any) -> Generation:
        gen = await self.join_all(members, version=version, **join_kw)
        gen = await self.sync_all(gen, members, assignments=assignments)
        for m in members:
            self.expect_error(gen.syncs[m.name], "NONE", f"{m.name}'s SyncGroup")
        return gen

    # ---------------------------------------------------------------- checks

    def check(self, ok: bool, what: str, expected: Any, actual: Any) -> None:
        if not ok:
            raise Violation(what, expected, actual)

    def expect_equal(self, actual: Any, expected: Any, what: str) -> None:
        self.check(actual == expected, what, expected, actual)

    def expect_error(self, response: Any, expected: str | int, what: str) -> None:
        codes = self.target.error_codes
        want = expected if isinstance(expected, int) else codes[expected] if expected in codes else ErrorCode[expected].value
        got = response.error_code
        if got != want:
            raise Violation(what, error_text(want, codes), error_text(got, codes))

    def note(self, text: str) -> None:
        self.notes.append(text)


class CoordinatorContext(CaseContext):
    """A coordinator case's context: its scripted members are the target's only clients, so
    it needs nothing beyond the shared context."""
