"""Broker-side replay: play the broker's half of a transcript to whatever client connects,
and report the first point where the client's requests diverge from the script's.

The rules (``ScriptState``, pure):

- Connections: a client connection is bound, on its first request, to the first script
  connection not yet bound (in the order they first appear in the script) whose first
  request has the same API. Within a connection the script's order is strict.
- Requests: each must be the script's next request on its connection: same API, same
  version, and a body that matches the recorded one under the event's matchers (captures
  bind; client-chosen values can be captured and echoed into responses with ``ref``).
- Responses (and closes by the broker) are released once their request has arrived and
  every request the script recorded before them, on any connection, has arrived too; so a
  JoinGroup answer that waited for another member's join still waits for it. The client's
  correlation id is used, and the broker's recorded address is replaced by the real one.
- The run is complete when every scripted request has arrived and every response and close
  has been sent; a client that stops short stalls it (reported after ``--script-timeout``).

The I/O shell (``ScriptPlayer``) is a FakeBroker hook: each request is answered by a
``Defer`` that waits for its response to be released.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from ..protocol import Registry
from ..intercept.hooks import Action, Call, Close, Defer, Drop, Respond
from ..intercept.matchers import Bindings, Divergence, compare, join_path, play
from .recorder import Recorder
from .replay import Failure, Report, describe_event
from ..exchange.transcript import Event, Transcript, TranscriptError


class ScriptError(TranscriptError):
    """A transcript that cannot be played as a script."""


@dataclass
class _Step:
    index: int  # position in the transcript's events (0-based)
    event: Event
    done: bool = False


@dataclass
class _ScriptConn:
    key: Any  # the script's connection id
    steps: list[_Step] = field(default_factory=list)
    cursor: int = 0  # next step of this connection
    client: Any = None  # the client connection bound to it

    def next(self) -> _Step | None:
        return self.steps[self.cursor] if self.cursor < len(self.steps) else None


def prepare(transcript: Transcript) -> Transcript:
    """Check a transcript can be played, and make the broker's recorded address a bound
    name (``broker.host`` / ``broker.port``) in the responses that carry it."""
    if not transcript.requests():
        raise ScriptError(transcript.source, 1, "the script has no request to expect")
    for ev in transcript.events:
        if ev.kind == "request" and ev.body is None:
            raise ScriptError(transcript.source, ev.line, "an undecodable request cannot be "
                                                          "expected by a script")
    broker = (transcript.header or {}).get("broker") or {}
    host, port = broker.get("host"), broker.get("port")
    for ev in transcript.events:
        if ev.kind == "response" and ev.body is not None and (host or port):
            _bind_address(ev.body, [], ev.match, host, port)
    return transcript


def _bind_address(node: Any, path: list[str | int], match: dict[str, Any], host: Any,
                  port: Any) -> None:
    if isinstance(node, dict):
        for k, v in node.items():
            here = path + [k]
            where = join_path(here)
            if where in match:
                continue
            if k == "Host" and host and v == host:
                match[where] = {"ref": "broker.host"}
            elif k == "Port" and port and v == port:
                match[where] = {"ref": "broker.port"}
            else:
                _bind_address(v, here, match, host, port)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            _bind_address(v, path + [i], match, host, port)


class ScriptState:
    """What the script expects next, what has happened, and the first divergence."""

    def __init__(self, transcript: Transcript, registry: Registry, bindings: Bindings | None = None) -> None:
        self.t = transcript
        self.registry = registry
        self.bindings: Bindings = dict((transcript.header or {}).get("bindings") or {})
        self.bindings.update(bindings or {})
        self.steps = [_Step(i, e) for i, e in enumerate(transcript.events)]
        self.conns: dict[Any, _ScriptConn] = {}
        for st in self.steps:
            self.conns.setdefault(st.event.conn, _ScriptConn(st.event.conn)).steps.append(st)
        self.bound: dict[Any, _ScriptConn] = {}  # client connection -> script connection
        self.failure: Failure | None = None

    # ------------------------------------------------------------------ progress

    @property
    def complete(self) -> bool:
        """Every scripted request arrived, every response and close by the broker sent
        (a client's own closes at the end are not waited for)."""
        return all(st.done or (st.event.kind == "close" and st.event.by == "client")
                   for st in self.steps)

    def first_pending(self) -> _Step | None:
        return next((st for st in self.steps if not st.done
                     and not (st.event.kind == "close" and st.event.by == "client")), None)

    def releasable(self, st: _Step) -> bool:
        """A broker action may go once every request recorded before it has arrived."""
        return all(p.done for p in self.steps[: st.index]
                   if p.event.kind == "request")

    def _fail(self, st: _Step | None, event: Event, message: str,
              divergence: Divergence | None = None) -> Failure:
        if self.failure is None:
            self.failure = Failure((st.index + 1) if st else 0, event, message,
                                   [divergence] if divergence is not None else [])
        return self.failure

    # ------------------------------------------------------------------ inputs

    def bind(self, client: Any, api_key: int) -> _ScriptConn | None:
        if client in self.bound:
            return self.bound[client]
        for sc in self.conns.values():
            first = next((s for s in sc.steps if s.event.kind == "request"), None)
            if sc.client is None and sc.cursor == 0 and first is not None and first.event.api_key == api_key:
                sc.client = client
                self.bound[client] = sc
                return sc
        return None

    def request(self, client: Any, api_key: int, version: int, body: dict[str, Any],
                correlation_id: int) -> tuple[_Step | None, Failure | None]:
        """A client's request: the step it satisfies, or the divergence it causes."""
        actual = Event("request", client, correlation_id=correlation_id, api_key=api_key,
                       version=version, body=body, api=self.registry.api_name(api_key))
        sc = self.bind(client, api_key)
        if sc is None:
            expected = self.first_pending()
            return None, self._fail(expected, expected.event if expected else actual,
                                    f"a new connection's first request is "
                                    f"{self.registry.api_name(api_key)}; no unbound connection of "
                                    f"the script starts with it",
                                    Divergence("<api>", _expected_api(self, expected), actual.api, "unexpected connection"))
        st = sc.next()
        on = f"client connection {client!r}"
        if st is None or st.event.kind != "request":
            what = "the script ends there" if st is None else f"the script expects {describe_event(st.event, self.registry)}"
            return None, self._fail(st, st.event if st else actual,
                                    f"an extra {actual.api} request on {on}: {what}",
                                    Divergence("<api>", None if st is None else _event_api(self, st.event),
                                               actual.api, "request not in the script"))
        ev = st.event
        if ev.api_key != api_key:
            return None, self._fail(st, ev, f"{on} sent another request than the script's",
                                    Divergence("<api>", _event_api(self, ev), actual.api, "other API"))
        if ev.version != version:
            return None, self._fail(st, ev, f"{on} sent another version",
                                    Divergence("<version>", ev.version, version, "other version"))
        d = compare(ev.body, body, ev.match, self.bindings)
        if d is not None:
            return None, self._fail(st, ev, f"the request on {on} differs", d)
        st.done = True
        sc.cursor += 1
        return st, None

    def broker_action(self, client: Any) -> _Step | None:
        """The script's next step on this connection if it is the broker's (a response or
        a close by the broker), else None."""
        sc = self.bound.get(client)
        st = sc.next() if sc else None
        if st is None:
            return None
        e = st.event
        return st if e.kind == "response" or (e.kind == "close" and e.by == "broker") else None

    def sent(self, st: _Step) -> None:
        st.done = True
        self.conns[st.event.conn].cursor += 1

    def response_body(self, st: _Step) -> dict[str, Any]:
        assert st.event.body is not None
        return play(st.event.body, st.event.match, self.bindings)

    def client_closed(self, client: Any) -> None:
        sc = self.bound.get(client)
        if sc is None:
            return
        st = sc.next()
        while st is not None and st.event.kind == "close" and st.event.by == "client":
            self.sent(st)
            st = sc.next()
        if st is not None and self.failure is None:
            self._fail(st, st.event, f"client connection {client!r} closed; the script expects "
                                     "this step on it")

    def stalled(self, seconds: float) -> Failure:
        st = self.first_pending()
        assert st is not None
        return self._fail(st, st.event, f"stalled: nothing the script waits for happened within "
                                        f"{seconds:g} s (waiting for this step)")


def _event_api(s: ScriptState, ev: Event) -> str | None:
    return s.registry.api_name(ev.api_key) if ev.api_key is not None else None


def _expected_api(s: ScriptState, st: _Step | None) -> str | None:
    return _event_api(s, st.event) if st is not None else None


# ---------------------------------------------------------------------------- the shell

class ScriptPlayer:
    """Installs a script on a FakeBroker; ``done`` resolves to the Report."""

    def __init__(self, broker: Any, transcript: Transcript, registry: Registry, *,
                 timeout_s: float = 30.0) -> None:
        self.broker = broker
        self.registry = registry
        self.transcript = prepare(transcript)
        self.timeout_s = timeout_s
        self.state: ScriptState | None = None
        self.done: asyncio.Future[Report] | None = None
        self._changed: asyncio.Event | None = None
        self._last_progress = time.monotonic()
        self._watchdog: asyncio.Task[None] | None = None

    def install(self) -> None:
        """Call once the broker is started (the script's broker address becomes its own)."""
        host, port = self.broker.bootstrap.rsplit(":", 1)
        self.state = ScriptState(self.transcript, self.registry,
                                 {"broker.host": host, "broker.port": int(port)})
        loop = asyncio.get_running_loop()
        self.done = loop.create_future()
        self._changed = asyncio.Event()
        self.broker.hooks.add(self._hook, keep=True, name="script")
        self.broker.record(Recorder(self._observe))  # to see clients close their connections
        self._watchdog = asyncio.ensure_future(self._watch())

    def _report(self) -> Report:
        assert self.state is not None
        steps = sum(1 for st in self.state.steps if st.done)
        return Report(self.transcript.source, "script", steps=steps, failure=self.state.failure,
                      bindings=self.state.bindings)

    def _progress(self) -> None:
        assert self.state is not None and self.done is not None and self._changed is not None
        self._last_progress = time.monotonic()
        self._changed.set()
        if not self.done.done() and (self.state.failure is not None or self.state.complete):
            self.done.set_result(self._report())

    def _observe(self, line: dict[str, Any]) -> None:
        if line.get("kind") == "close" and line.get("by") == "client" and self.state is not None:
            self.state.client_closed(line["conn"])
            self._progress()

    def _hook(self, call: Call) -> Action:
        call.keep()
        return Defer(lambda: self._answer(call), label="script")

    async def _answer(self, call: Call) -> Action:
        s = self.state
        assert s is not None and self._changed is not None
        if s.failure is not None or s.complete:
            return Close()  # diverged or finished: nothing more to say
        _, failure = s.request(call.conn, call.api_key, call.version, call.request.to_json(),
                               call.correlation_id)
        self._progress()
        if failure is not None:
            return Close()
        while True:
            st = s.broker_action(call.conn)
            if st is None:
                return Drop()  # the script recorded no answer to this request
            if s.failure is not None:
                return Close()
            if s.releasable(st):
                break
            self._changed.clear()
            await self._changed.wait()
        s.sent(st)
        if st.event.kind == "close":
            self._progress()
            return Close()
        body = s.response_body(st)
        self._progress()
        return Respond(self.registry.response(call.api_key).cls.from_json(body))

    async def _watch(self) -> None:
        assert self.done is not None and self.state is not None
        while not self.done.done():
            await asyncio.sleep(min(0.2, self.timeout_s / 4))
            if time.monotonic() - self._last_progress > self.timeout_s and not self.done.done():
                self.state.stalled(self.timeout_s)
                self._progress()

    def stop(self) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()


def render_script_report(report: Report, registry: Registry) -> str:
    """'DIVERGED' / 'COMPLETE' wording for the broker side."""
    text = report.render(registry)
    if report.failure is not None:
        return text.replace("FAIL script", "DIVERGED: the client left the script", 1)
    return f"COMPLETE: the client followed the script ({report.source}), {report.steps} step(s)"
