"""The request pipeline (``Pipeline._exchange``): decode, request-side hooks, route,
response-side hooks, encode. A route answers the request: a broker-side handler (``apis``),
the group coordinator, or in proxy mode the upstream broker (``proxy``)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ..coordinator import RequestContext
from ..intercept.hooks import (Action, Call, Close, Continue, Defer, Delay, Drop, ErrorResponse,
                               Hold, Respond)
from ..protocol import DecodeError, EncodeError, Struct
from ..protocol.error_codes import ErrorCode
from ..protocol.framing import Request, decode_request, encode_response
from .acl import ANONYMOUS
from .apis import HANDLERS, api_versions
from .authorize import PASS
from .connection import Connection, Sent
from .offload import OFFLOAD_DECODE_BYTES, decode
from .proxy import NO_REPLY, NoReply

log = logging.getLogger("fakebroker")


class Pipeline:
    """``FakeBroker``'s request pipeline (a mixin: the broker holds the state)."""

    async def _exchange(self, conn: Connection, frame: bytes) -> bytes | None:
        """The request pipeline: decode, request hooks, route, response hooks, encode. One
        request frame (no size prefix) in; its response frame out, b"" to send nothing (a
        hook dropped the reply, or the route gives none), None to close the connection."""
        assert self.ctx is not None
        if self.proxy is not None and self.proxy.raw(frame):
            conn.requests += 1
            return await self.proxy.forward_raw(conn, frame)  # no spec: bytes both ways
        try:
            if len(frame) < OFFLOAD_DECODE_BYTES:  # (most: no coroutine to await)
                req, prepared = decode_request(self.registry, frame), None
            else:  # a big frame is decoded, and its coordinator view built, off the loop
                req, prepared = await decode(self.registry, frame, lambda r: self.coordinator.prepare(
                    r.api_key, r.version, r.body))
        except DecodeError as e:
            self._record_request(conn, frame, error=str(e))
            return self._refuse(conn, e)
        conn.requests += 1
        if not self._advertised(req.api_key, req.version):
            log.error("connection %d: %s v%d is not advertised; closing", conn.id,
                      self.registry.api_name(req.api_key), req.version)
            self._record_request(conn, frame, req)
            conn.close_reason = "version not advertised"
            return None
        if conn.sasl is not None:
            verdict = conn.sasl.receive(req.api_key, req.body)
            if not verdict.admit:
                # Authentication is the listener's, before any hook or route sees a request.
                self._record_request(conn, frame, req)
                if verdict.answer is None:
                    log.error("connection %d: %s; closing", conn.id, verdict.close)
                    conn.close_reason = verdict.close
                    return None
                conn.close_after_reply = verdict.close
                return self._encode(conn, req, verdict.answer, [])
        notes: list[str] = []
        call = self._call(conn, req) if len(self.hooks) else None  # (most: no hook, no Call)
        outcome, body = "continue", None
        if call is not None:
            received = req.body.to_json() if self.recorders else None  # before a hook edits it
            action = self._decide(call, notes)
            self._record_request(conn, frame, req, received, notes)
            outcome, body = await self._perform(call, action, conn)
        elif self.recorders:
            self._record_request(conn, frame, req, None, notes)
        if outcome == "continue":
            if call is not None:
                req.body, prepared = call.request, None  # a hook may have edited it
            routed = await self.route(conn, req, prepared)
            if routed is None or routed is NO_REPLY:
                return None if routed is None else b""  # (None: the route closed the connection)
            body = routed
        elif outcome != "respond":
            return self._no_reply(conn, outcome, notes)
        assert body is not None
        if not len(self.hooks):
            return self._encode(conn, req, body, notes)
        if call is None:
            call = self._call(conn, req)  # a hook came while the request waited
        call.side, call.response, call.now_ms = "response", body, self.clock.now_ms()
        action = self._decide(call, notes)
        if action is not None:
            outcome, replaced = await self._perform(call, action, conn)
            if outcome in ("drop", "close"):
                return self._no_reply(conn, outcome, notes)
            body = replaced if outcome == "respond" else call.response
        assert body is not None
        return self._encode(conn, req, body, notes)

    def _call(self, conn: Connection, req: Request) -> Call:
        """The request as hooks see it."""
        return Call(self.registry, conn.id, req.api_key, req.version, req.correlation_id,
                    req.header.client_id, req.body, self.clock.now_ms(), peer=conn.peer)  # type: ignore[attr-defined]

    def _advertised(self, api_key: int, version: int) -> bool:
        assert self.ctx is not None
        lo, hi = self.ctx.supported.get(api_key, (0, -1))
        return lo <= version <= hi

    def _encode(self, conn: Connection, req: Request, body: Struct, notes: list[str]) -> bytes | None:
        """The response frame (size prefix included), recorded; None closes the connection."""
        if getattr(type(body), "_message_type", None) is not self.registry.responses.get(req.api_key):
            log.error("connection %d: a hook answered %s with %s; closing", conn.id,
                      self.registry.api_name(req.api_key), type(body).__name__)
            conn.close_reason = "hook answered with the wrong type"
            return None
        try:
            out = encode_response(self.registry, body, req.version, req.correlation_id,
                                  size_prefix=True)
        except EncodeError as e:
            log.error("connection %d: cannot encode %s v%d response: %s; closing", conn.id,
                      self.registry.api_name(req.api_key), req.version, e)
            conn.close_reason = f"cannot encode the response: {e}"
            return None
        if conn.closed:
            return None  # the client left while it waited: the reply is discarded
        if self.recorders:
            conn.unrecorded = Sent(req.api_key, req.version, req.correlation_id, body, out, notes)
        return out

    def _record_sent(self, conn: Connection) -> None:
        """Record the answer just written, unless the write found the connection gone (a
        client that reset it: asyncio drops the bytes and closes the transport)."""
        sent, conn.unrecorded = conn.unrecorded, None
        assert sent is not None
        if conn.transport.is_closing():
            log.debug("connection %d: %s response (correlation id %d) not sent: the connection "
                      "is gone", conn.id, self.registry.api_name(sent.api_key), sent.correlation_id)
            return
        now = self.clock.now_ms()
        for rec in list(self.recorders):
            rec.response(self.registry, conn.id, sent.api_key, sent.version, sent.correlation_id,
                         sent.body, sent.frame, now, sent.notes)

    def _decide(self, call: Call, notes: list[str]) -> Action | None:
        if not len(self.hooks):
            return None
        action, hook = self.hooks.decide(call)
        if action is not None and hook is not None:
            notes.append(f"{call.side}:{call.label or hook.name}:{action.describe()}")
        return action

    def _no_reply(self, conn: Connection, outcome: str, notes: list[str]) -> bytes | None:
        if outcome == "drop":
            return b""
        conn.close_reason, conn.close_notes = "closed by a hook", notes
        return None

    async def _perform(self, call: Call, action: Action | None,
                       conn: Connection | None = None) -> tuple[str, Struct | None]:
        """Carry out a hook's action: ("continue" | "respond" | "drop" | "close", body)."""
        while action is not None:
            if isinstance(action, Continue):
                break
            if isinstance(action, Respond):
                body = action.body
                if isinstance(body, dict):
                    body = self.registry.response(call.api_key).cls.from_json(body)
                return "respond", body
            if isinstance(action, ErrorResponse):
                return "respond", call.error_response(action.code, action.message)
            if isinstance(action, Drop):
                return "drop", None
            if isinstance(action, Close):
                return "close", None
            if isinstance(action, Delay):
                if action.real:
                    with self._waiting(lambda: False, conn):
                        await asyncio.sleep(action.ms / 1000)
                else:
                    deadline = self.clock.now_ms() + action.ms
                    with self._waiting(lambda: self.clock.now_ms() >= deadline, conn):
                        await self.clock.sleep_until(deadline)
                action = action.then
            elif isinstance(action, Hold):
                await self._hold(action, conn)
                action = action.then
            elif isinstance(action, Defer):
                with self._waiting(lambda: False, conn):
                    action = await action.decide()
            else:
                raise TypeError(f"unknown action {action!r}")
        return "continue", None

    async def _hold(self, action: Hold, conn: Connection | None) -> None:
        gate = action.gate
        if action.timeout_ms is None:
            with self._waiting(lambda: gate.opened, conn):
                await gate.wait()
            return
        deadline = self.clock.now_ms() + action.timeout_ms
        with self._waiting(lambda: gate.opened or self.clock.now_ms() >= deadline, conn):
            waiters = [asyncio.ensure_future(gate.wait()),
                       asyncio.ensure_future(self.clock.sleep_until(deadline))]
            try:
                await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for w in waiters:
                    w.cancel()

    def _record_request(self, conn: Connection, frame: bytes, req: Request | None = None,
                        body: dict[str, Any] | None = None, notes: list[str] | None = None,
                        error: str | None = None) -> None:
        if not self.recorders:
            return
        now = self.clock.now_ms()
        for rec in list(self.recorders):
            if req is None:
                rec.request(self.registry, conn.id, frame, now, error=error)
            else:
                rec.request(self.registry, conn.id, frame, now, header=req.header,
                            body=body if body is not None else req.body.to_json(), hooks=notes)

    def _refuse(self, conn: Connection, e: DecodeError) -> bytes | None:
        header = e.header
        if (e.rule == "unsupported-version" and header is not None
                and header.request_api_key == api_versions.API_KEY):  # type: ignore[attr-defined]
            # Kafka answers an ApiVersions it cannot parse with v0 and its own ranges, so the
            # client can retry with a version both sides know.
            assert self.ctx is not None
            body = api_versions.response(self.ctx, ErrorCode.UNSUPPORTED_VERSION)
            out = encode_response(self.registry, body, 0, header.correlation_id,  # type: ignore[attr-defined]
                                  size_prefix=True)
            if self.recorders:
                conn.unrecorded = Sent(api_versions.API_KEY, 0, header.correlation_id,  # type: ignore[attr-defined]
                                        body, out, None)
            return out
        log.error("connection %d: malformed request: %s; closing", conn.id, e)
        conn.close_reason = f"malformed request: {e}"
        return None

    async def route(self, conn: Connection, req: Request,
                    prepared: object | None = None) -> Struct | NoReply | None:
        """Answer a decoded request once the ACLs (if any) allow it: the upstream (proxy
        mode), a broker-side handler or the group coordinator. ``NO_REPLY``: send nothing;
        None: the route closed the connection (its ``close_reason`` says why). ``prepared``:
        the request's ``GroupCoordinator.prepare`` view, if any (built off the loop)."""
        verdict = PASS
        if self.authorizer is not None:
            user = conn.sasl.user if conn.sasl is not None else None
            verdict = self.authorizer.check(f"User:{user}" if user else ANONYMOUS,
                                            req.api_key, req.version, req.body)
        if verdict.refusal is not None:
            return verdict.refusal
        if verdict.request is not None:
            req.body, prepared = verdict.request, None
        body = await self._dispatch(conn, req, prepared)
        if verdict.after is not None and body is not None and body is not NO_REPLY:
            verdict.after(body)
        return body

    async def _dispatch(self, conn: Connection, req: Request,
                        prepared: object | None) -> Struct | NoReply | None:
        assert self.ctx is not None
        if self.proxy is not None and self.proxy.forwards(req.api_key):
            return await self.proxy.forward(conn, req)
        handler = HANDLERS.get(req.api_key)
        if handler is not None:
            result = handler.handle(self.ctx, req.body, req.version)
            if asyncio.iscoroutine(result):
                # (A Fetch waiting on the clock: quiet() sees its sleeper.)
                with self._waiting(lambda: False, conn):
                    result = await result
            return result
        rid = next(self._request_ids)
        client_id = req.header.client_id or ""  # type: ignore[attr-defined]
        rctx = RequestContext(rid, req.api_key, req.version, client_id, conn.host)
        body = self._deliver(self.coordinator.handle(rctx, req.body, self.clock.now_ms(), prepared),
                             rid)
        if body is not None:  # answered at once: no future, nothing to wait for (most requests)
            return body
        fut: asyncio.Future[Struct] = asyncio.get_running_loop().create_future()
        self._pending[rid] = fut  # (before any reply can come: those come from the loop)
        try:
            with self._waiting(fut.done, conn):
                return await fut
        finally:
            self._pending.pop(rid, None)
