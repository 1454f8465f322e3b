"""Client-side replay: send a transcript's requests to a coordinator and compare its
responses with the recorded ones, allowing for what legitimately varies (matchers).

Requests go out as recorded (same connections, correlation ids and client ids), with
captured values substituted (a member id the coordinator generated is bound on first sight
and used in later requests); every wait is bounded. Time follows the transcript: on a
``RealPacer`` the replay waits as long as the recording did between events (each step
capped), on a ``VirtualPacer`` it advances an in-process broker's virtual clock instead.

The result is a ``Report``: PASS, FAIL with every divergence (the step, the message, and
each differing field with expected and actual), SKIP (virtual-only, or a wait above the
cap) or BROKEN (the coordinator could not be reached). Only pinned fields fail a step: a
field whose matcher says ``unpinned`` (no requirement pins it) that differs is a note
("differs from the recording"), listed apart. A response that differs still arrived, so
the replay goes on and reports each later difference too; it stops where going on would
only echo the first problem (no response, a closed connection, a value it never captured).
What was sent and answered is kept as transcript events (``Report.exchanged``).
"""

from __future__ import annotations

import asyncio
import secrets
import struct
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from ..protocol import DecodeError, Registry
from ..protocol.framing import decode_response
from ..intercept.matchers import (Bindings, Divergence, Unbound, check_value, compare_all, get_path,
                                  play, render_field)
from ..exchange.pairing import OpenRequests, response_of
from ..exchange.transcript import Event, Transcript

DEFAULT_TIMEOUT_S = 10.0
DEFAULT_MAX_STEP_S = 30.0
DEFAULT_GAP_S = 0.05


class ConnectionClosed(Exception):
    pass


class RawConnection:
    """Frames out as given; response frames matched to correlation ids; bounded connect."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader, self._writer = reader, writer
        self._waiting: dict[int, asyncio.Future[bytes]] = {}
        self._early: dict[int, bytes] = {}
        self.closed = asyncio.get_running_loop().create_future()
        self._pump = asyncio.ensure_future(self._read())

    @classmethod
    async def open(cls, host: str, port: int, timeout_s: float) -> RawConnection:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout_s)
        return cls(reader, writer)

    async def _read(self) -> None:
        reason = "closed by the peer"
        try:
            while True:
                head = await self._reader.readexactly(4)
                (size,) = struct.unpack(">i", head)
                if size < 4:
                    reason = f"sent a frame of size {size}"
                    break
                frame = head + await self._reader.readexactly(size)
                (cid,) = struct.unpack_from(">i", frame, 4)
                fut = self._waiting.pop(cid, None)
                if fut is None:
                    self._early[cid] = frame  # an unexpected answer: kept for the report
                elif not fut.done():
                    fut.set_result(frame)
        except (asyncio.IncompleteReadError, ConnectionError) as e:
            reason = "closed by the peer" if isinstance(e, asyncio.IncompleteReadError) else str(e)
        except asyncio.CancelledError:
            reason = "closed"
        if not self.closed.done():
            self.closed.set_result(reason)
        for fut in self._waiting.values():
            if not fut.done():
                fut.set_exception(ConnectionClosed(reason))
        self._waiting.clear()

    def send(self, frame: bytes, correlation_id: int | None, expect_reply: bool) -> asyncio.Future[bytes] | None:
        if self.closed.done():
            raise ConnectionClosed(self.closed.result())
        fut = None
        if expect_reply and correlation_id is not None:
            fut = asyncio.get_running_loop().create_future()
            self._waiting[correlation_id] = fut
        self._writer.write(frame)
        return fut

    async def close(self) -> None:
        self._pump.cancel()
        self._writer.close()
        try:
            await self._writer.wait_closed()
        except (ConnectionError, OSError):
            pass


# ---------------------------------------------------------------------------- pacing

class Pacer(Protocol):
    async def to(self, offset_ms: int) -> None:
        """Let time reach ``offset_ms`` after the transcript's first event."""

    async def after_send(self, requests_sent: int, next_on_other_connection: bool) -> None:
        """A request went out; give the coordinator the chance to see it in order."""

    def answered(self, offset_ms: int) -> None:
        """The response recorded at ``offset_ms`` has just been checked."""


class RealPacer:
    """Wall-clock waits as long as the recording's, each capped at ``max_step_s``. Elastic:
    an answer that comes later than recorded (a coordinator with an initial rebalance
    delay, a slow machine) moves the rest of the schedule, so the recorded gaps after it
    (a session left to expire, say) are kept in full."""

    def __init__(self, max_step_s: float = DEFAULT_MAX_STEP_S, gap_s: float = DEFAULT_GAP_S) -> None:
        self.max_step_s, self.gap_s = max_step_s, gap_s
        self._start: float | None = None

    async def to(self, offset_ms: int) -> None:
        loop = asyncio.get_running_loop()
        if self._start is None:
            self._start = loop.time() - offset_ms / 1000
        delay = self._start + offset_ms / 1000 - loop.time()
        if delay > 0:
            await asyncio.sleep(min(delay, self.max_step_s))

    async def after_send(self, requests_sent: int, next_on_other_connection: bool) -> None:
        # A real coordinator serves connections concurrently: a short pause keeps requests
        # of different connections in the recorded order (the leader is the first joiner).
        if next_on_other_connection and self.gap_s > 0:
            await asyncio.sleep(self.gap_s)

    def answered(self, offset_ms: int) -> None:
        now = asyncio.get_running_loop().time()
        if self._start is None or now - offset_ms / 1000 > self._start:
            self._start = now - offset_ms / 1000


class VirtualPacer:
    """Drives an in-process FakeBroker on a VirtualClock: time advances instantly, and each
    request is handled before the next is sent."""

    def __init__(self, broker: Any, max_turns: int = 200_000) -> None:
        from .recorder import Recorder
        self.broker = broker
        self.clock = broker.clock
        self._origin: int | None = None
        self._rec = broker.record(Recorder(keep=False))
        self._turns = max_turns
        self._base = 0  # requests the broker saw before this replay

    async def _quiet(self, requests: int | None = None) -> None:
        for i in range(self._turns):
            if (requests is None or self._rec.requests_seen >= requests) and self.broker.quiet():
                return
            await asyncio.sleep(0 if i < 1000 else 0.001)
        raise TimeoutError("the broker never became idle")

    async def to(self, offset_ms: int) -> None:
        now = self.clock.now_ms()
        if self._origin is None:
            self._origin = now - offset_ms
        target = self._origin + offset_ms
        if target > now:
            self.clock.advance(target - now)
        await self._quiet()

    async def after_send(self, requests_sent: int, next_on_other_connection: bool) -> None:
        await self._quiet(self._base + requests_sent)

    def begin(self) -> None:
        self._base = self._rec.requests_seen

    def answered(self, offset_ms: int) -> None:
        pass  # virtual time never runs late


# ---------------------------------------------------------------------------- reports

@dataclass
class Failure:
    step: int  # 1-based, over the transcript's events
    event: Event
    message: str
    divergences: list[Divergence] = field(default_factory=list)  # every differing field

    @property
    def divergence(self) -> Divergence | None:
        """The step's first differing field (None: no answer to compare)."""
        return self.divergences[0] if self.divergences else None


@dataclass
class Report:
    source: str
    name: str
    steps: int = 0
    failure: Failure | None = None  # the first difference
    skipped: str | None = None
    broken: str | None = None
    bindings: Bindings = field(default_factory=dict)
    later: list[Failure] = field(default_factory=list)  # the differences after the first
    notes: list[Failure] = field(default_factory=list)  # unpinned fields that differ, per step
    exchanged: list[Event] = field(default_factory=list)  # what was sent and answered

    @property
    def failures(self) -> list[Failure]:
        return ([self.failure] if self.failure else []) + self.later

    def fail(self, failure: Failure) -> None:
        if self.failure is None:
            self.failure = failure
        else:
            self.later.append(failure)

    @property
    def ok(self) -> bool:
        return self.failure is None and self.skipped is None and self.broken is None

    @property
    def status(self) -> str:
        if self.broken:
            return "BROKEN"
        if self.failure:
            return "FAIL"
        return "SKIP" if self.skipped else "PASS"

    def render(self, registry: Registry) -> str:
        head = f"{self.status} {self.name} ({self.source})"
        if self.broken:
            return f"{head}\n  {self.broken}"
        if self.skipped:
            return f"{head}\n  skipped: {self.skipped}"
        if self.failure is None:
            return f"{head}: {self.steps} step(s)" + "".join("\n" + n for n in self.note_lines())
        fs = self.failures
        lines = [head if len(fs) == 1 else f"{head}: {len(fs)} differences"]
        for f in fs:
            lines += [f"  step {f.step} (line {f.event.line}): {describe_event(f.event, registry)}",
                      f"  {f.message}"]
            for d in f.divergences:
                lines += [f"  field:    {d.path or '<body>'}", f"  expected: {render_field(d.path, d.expected)}",
                          f"  actual:   {render_field(d.path, d.actual)}", f"  reason:   {d.reason}"]
        return "\n".join(lines + self.note_lines())

    def note_lines(self) -> list[str]:
        """One line per unpinned field that differs: informational, never a failure."""
        return [f"  note: step {n.step}: differs from the recording: {d.path} expected "
                f"{render_field(d.path, d.expected)} got {render_field(d.path, d.actual)}"
                for n in self.notes for d in n.divergences]


def describe_event(ev: Event, registry: Registry) -> str:
    if ev.kind == "close":
        return f"connection {ev.conn!r} closed by the {ev.by}"
    api = registry.api_name(ev.api_key) if ev.api_key is not None else "?"
    return (f"{api} v{ev.version} {ev.kind} on connection {ev.conn!r} "
            f"(correlation id {ev.correlation_id})")


# ---------------------------------------------------------------------------- replay

def initial_bindings(transcript: Transcript, unique: str | None) -> Bindings:
    """The header's bindings; names it lists as unique get ``-<token>`` appended, so a
    replay's groups never meet those of an earlier run on the same coordinator."""
    head = transcript.header or {}
    b: Bindings = dict(head.get("bindings") or {})
    if unique:
        for name in head.get("unique") or []:
            if isinstance(b.get(name), str):
                b[name] = f"{b[name]}-{unique}"
    return b


def precheck(transcript: Transcript, *, real_time: bool, max_step_s: float,
             include_virtual_only: bool = False) -> str | None:
    """Why the transcript cannot be replayed here (a skip reason), or None."""
    head = transcript.header or {}
    if real_time and head.get("virtual_only") and not include_virtual_only:
        return f"virtual-only: {head['virtual_only']}"
    if real_time:
        times = [e.vtime_ms for e in transcript.events if e.vtime_ms is not None]
        gaps = [b - a for a, b in zip(times, times[1:])]
        if gaps and max(gaps) / 1000 > max_step_s:
            return (f"needs a wait of {max(gaps) / 1000:g} s between two steps, above the "
                    f"{max_step_s:g} s cap (--max-step)")
    return None


async def replay(transcript: Transcript, target: str, registry: Registry, *,
                 pacer: Pacer | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
                 unique: str | None = None, bindings: Bindings | None = None,
                 negotiate: bool = False) -> Report:
    """Replay ``transcript`` against ``target`` (HOST:PORT). ``unique``: a token for the
    header's unique names (None: keep them as recorded). ``bindings``: the target's own
    values for names of the header (the id of a topic it created, say). ``negotiate``:
    each connection starts with ApiVersions, as a client's does (the transcript's versions
    were fitted to the target beforehand: ``at_versions``)."""
    host, _, port_text = target.rpartition(":")
    name = str((transcript.header or {}).get("id") or transcript.source)
    report = Report(transcript.source, name)
    try:
        port = int(port_text)
    except ValueError:
        report.broken = f"{target!r} is not HOST:PORT"
        return report
    pacer = pacer or RealPacer()
    if isinstance(pacer, VirtualPacer):
        pacer.begin()
    bindings = report.bindings = {**initial_bindings(transcript, unique), **(bindings or {})}
    conns: dict[Any, RawConnection] = {}
    waiting: OpenRequests[asyncio.Future[bytes]] = OpenRequests()
    answered = response_of(transcript.events)  # by id() of the requests the transcript answers
    events = transcript.events
    first = next((e.vtime_ms for e in events if e.vtime_ms is not None), 0)
    sent = 0
    try:
        for i, ev in enumerate(events):
            step = i + 1
            report.steps = step
            if ev.vtime_ms is not None:
                await pacer.to(ev.vtime_ms - first)
            if ev.kind == "request":
                conn = conns.get(ev.conn)
                if conn is None:
                    try:
                        conn = conns[ev.conn] = await RawConnection.open(host, port, timeout_s)
                        if negotiate:
                            await start_with_api_versions(conn, registry, timeout_s)
                    except (OSError, asyncio.TimeoutError, ConnectionClosed) as e:
                        report.broken = f"cannot connect to {target}: {e or 'timed out'}"
                        return report
                try:
                    body = play(ev.body, ev.match, bindings) if ev.body is not None else None
                except Unbound as e:
                    report.fail(Failure(step, ev, f"the request uses {e.args[0]!r}, which no "
                                                  "earlier response captured"))
                    return report
                frame = ev.frame(registry, body=body) if body is not None else ev.raw
                assert frame is not None
                report.exchanged.append(replace(ev, body=body, raw=frame, match={},
                                                time=time.time()))
                try:
                    fut = conn.send(frame, ev.correlation_id, id(ev) in answered)
                except ConnectionClosed as e:
                    report.fail(Failure(step, ev, f"cannot send: the connection was {e}"))
                    return report
                if fut is not None:
                    waiting.sent(ev.conn, ev.correlation_id, fut)
                sent += 1
                nxt = events[i + 1] if i + 1 < len(events) else None
                await pacer.after_send(sent, nxt is not None and nxt.conn != ev.conn)
            elif ev.kind == "response":
                failure = await _check_response(ev, step, waiting, registry, bindings, timeout_s, report)
                if failure is not None:
                    report.fail(failure)
                    if failure.divergence is None:
                        return report
                if ev.vtime_ms is not None:
                    pacer.answered(ev.vtime_ms - first)
            elif ev.kind == "close":
                conn = conns.pop(ev.conn, None)
                if conn is None:
                    continue
                if ev.by == "client":
                    await conn.close()
                else:
                    try:
                        await asyncio.wait_for(asyncio.shield(conn.closed), timeout_s)
                    except asyncio.TimeoutError:
                        report.fail(Failure(step, ev, f"the coordinator kept connection "
                                                      f"{ev.conn!r} open for {timeout_s:g} s"))
                        await conn.close()
                        return report
                    await conn.close()
        return report
    finally:
        for c in conns.values():
            await c.close()


async def _check_response(ev: Event, step: int, waiting: OpenRequests[asyncio.Future[bytes]],
                          registry: Registry, bindings: Bindings, timeout_s: float,
                          report: Report) -> Failure | None:
    """The step's failure (None: every pinned field conforms); unpinned fields that differ
    become the report's notes, and the answer joins ``report.exchanged``."""
    assert ev.correlation_id is not None and ev.api_key is not None and ev.version is not None
    fut = waiting.answer(ev.conn, ev.correlation_id)
    if fut is None:
        return Failure(step, ev, "its request was never sent (the transcript is out of order)")
    try:
        frame = await asyncio.wait_for(fut, timeout_s)
    except asyncio.TimeoutError:
        return Failure(step, ev, f"no response within {timeout_s:g} s")
    except ConnectionClosed as e:
        return Failure(step, ev, f"no response: the connection was {e}")
    try:
        resp = decode_response(registry, frame[4:], ev.api_key, ev.version, base=4)
    except DecodeError as e:
        return Failure(step, ev, f"the response does not decode: {e}")
    actual = resp.body.to_json()
    report.exchanged.append(replace(ev, body=actual, raw=frame, match={}, time=time.time()))
    differences, notes = compare_all(ev.body, actual, ev.match, bindings)
    if notes:
        report.notes.append(Failure(step, ev, "unpinned fields differ", notes))
    if differences:
        _capture_rest(actual, ev.match or {}, bindings)
        return Failure(step, ev, "the response differs", differences)
    return None


def _capture_rest(actual: Any, match: dict[str, Any], bindings: Bindings) -> None:
    """After a difference, still bind what the response captures (a member id the rest of
    the transcript refers to), so the replay can go on. Captures under a list whose order
    is free are left alone: which element is meant is only known from a full match."""
    free = [p for p, m in match.items() if "unordered" in m or "contains" in m]
    for path, m in match.items():
        if "capture" not in m or m["capture"] in bindings or "*" in path:
            continue
        if any(path.startswith(f + "[") for f in free):
            continue
        try:
            value = get_path(actual, path)
        except KeyError:
            continue
        check_value(m, value, bindings)  # binds only a value the matcher accepts


NEGOTIATION_CID = 2**31 - 1  # ApiVersions ahead of a transcript's own requests (none uses it)


async def start_with_api_versions(conn: RawConnection, registry: Registry, timeout_s: float) -> None:
    """ApiVersions (v3, else v0) on a new replay connection; ConnectionClosed if unanswered."""
    from ..negotiation import answer_of, request_frame
    for v in (3, 0):
        fut = conn.send(request_frame(registry, v, NEGOTIATION_CID), NEGOTIATION_CID, True)
        assert fut is not None
        try:
            frame = await asyncio.wait_for(fut, timeout_s)
        except asyncio.TimeoutError:
            raise ConnectionClosed(f"no ApiVersions answer within {timeout_s:g} s") from None
        if answer_of(registry, frame, v) is not None:
            return
    raise ConnectionClosed("the broker answered ApiVersions v3 and v0 with an error")


# Request fields a lower version may lose without changing what the coordinator does with
# the request: reasons are logged only (KIP-800), and SyncGroup's protocol type and name
# are checked only when present (KIP-559). At any depth.
DROPPABLE = {"JoinGroup": {"Reason"}, "LeaveGroup": {"Reason"},
             "SyncGroup": {"ProtocolType", "ProtocolName"}}


def at_versions(transcript: Transcript, ranges: Any, registry: Registry,
                needs: dict[str, tuple[int, int | None]], who: str) -> Transcript | str:
    """``transcript`` with every exchange at a version the broker supports (``ranges``,
    fakebroker.negotiation.ApiRanges), never above the recorded one and within ``needs``
    (the requirement's versions): re-encoded at the highest such version. A string: why it
    cannot be (no such version, or a request field the step depends on is lost)."""
    from dataclasses import replace as replaced
    from ..negotiation import VersionUnavailable
    from ..protocol.messages import sent_json
    events = []
    for ev in transcript.events:
        if not ev.is_frame or ev.api_key is None or ev.version is None or ev.body is None:
            events.append(ev)
            continue
        api = registry.api_name(ev.api_key)
        lo, hi = needs.get(api, (0, None))
        try:
            v = ranges.pick(api, lo, ev.version if hi is None else min(hi, ev.version), who=who)
        except VersionUnavailable as e:
            return f"{e} (the golden sends {api} v{ev.version})"
        if v == ev.version:
            events.append(ev)
            continue
        mt = registry.request(ev.api_key) if ev.kind == "request" else registry.response(ev.api_key)
        body = sent_json(mt.cls.from_json(ev.body), v, v in mt.spec.flexible_versions)
        for f in mt.cls._spec_fields:  # a null the version cannot carry reads as "" (Kafka's)
            if body.get(f.name) is None and v in f.versions and v not in f.nullable_versions \
                    and f.type.kind == "string":
                body[f.name] = ""
        if ev.kind == "request":
            drop = DROPPABLE.get(api, set())
            lost = sorted(k for k in ev.body if _without(ev.body[k], drop) != _without(body.get(k), drop)
                          and k not in drop)
            if lost:
                return (f"{ranges.describe(api)}; the golden's {api} v{ev.version} on line {ev.line} "
                        f"carries {', '.join(lost)}, which v{v} cannot")
        fields = {f.name for f in mt.cls._spec_fields if v in f.versions}
        match = {p: m for p, m in ev.match.items()
                 if not p or p.split(".")[0].split("[")[0] in fields}
        events.append(replaced(ev, version=v, body=body, raw=None, match=match))
    return replaced(transcript, events=events)


def _without(value: Any, drop: set[str]) -> Any:
    if isinstance(value, dict):
        return {k: _without(v, drop) for k, v in value.items() if k not in drop}
    if isinstance(value, list):
        return [_without(v, drop) for v in value]
    return value


def run_token() -> str:
    return secrets.token_hex(3)


async def replay_all(transcripts: Sequence[Transcript], target: str, registry: Registry, *,
                     timeout_s: float = DEFAULT_TIMEOUT_S, max_step_s: float = DEFAULT_MAX_STEP_S,
                     gap_s: float = DEFAULT_GAP_S, unique: bool = True,
                     include_virtual_only: bool = False) -> list[Report]:
    """Each transcript on its own connections, one after another, on real time. A
    coordinator that cannot be reached stops the run (the rest are not attempted)."""
    reports = []
    for t in transcripts:
        reason = precheck(t, real_time=True, max_step_s=max_step_s,
                          include_virtual_only=include_virtual_only)
        if reason is not None:
            reports.append(Report(t.source, str((t.header or {}).get("id") or t.source), skipped=reason))
            continue
        r = await replay(t, target, registry, pacer=RealPacer(max_step_s, gap_s),
                         timeout_s=timeout_s, unique=run_token() if unique else None)
        reports.append(r)
        if r.broken:
            break
    return reports
