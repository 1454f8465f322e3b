"""Hooks: intercept requests and responses passing through a FakeBroker.

The model is franz-go kfake's control functions, extended to both sides of the
coordinator. A hook is a function of a ``Call`` returning an ``Action``, or None to let the
call pass untouched. Hooks are tried in the order they were added; the first that returns
an action decides, and is removed then unless it was added with ``keep=True`` (or calls
``call.keep()``, kfake's KeepControl). A hook that returns None stays, so it can observe,
count, and act on the n-th match.

    broker.hooks.add(lambda call: ErrorResponse("REBALANCE_IN_PROGRESS"), api="Heartbeat")
    broker.hooks.add(lambda call: Delay(2000), api="SyncGroup", keep=True)
    broker.hooks.add(lambda call: Close(), api="JoinGroup")
    broker.hooks.add(rewrite, api="JoinGroup", side="response")  # sees call.response

Request-side hooks run before the coordinator sees the request (``Continue`` hands it on,
possibly after the hook edited ``call.request``); response-side hooks run on the response
about to be sent, whoever built it (``Continue`` sends it, edited or not).

Everything here is pure data and decisions; the broker performs the actions (waiting on
its clock, holding, writing or closing), so hooks behave the same on a virtual clock.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..protocol import Registry, Struct, default_registry
from .error_response import error_response, resolve_error

SIDES = ("request", "response")


# ---------------------------------------------------------------------------- actions

class Action:
    """What a hook decided. Subclasses are immutable values."""

    def describe(self) -> str:
        return type(self).__name__.lower()


@dataclass(frozen=True)
class Continue(Action):
    """Request side: let the coordinator handle the (possibly edited) request.
    Response side: send the (possibly edited) response."""

    def describe(self) -> str:
        return "continue"


@dataclass(frozen=True)
class Respond(Action):
    """Answer with this body (a response object, or its JSON form) instead."""

    body: Struct | dict[str, Any]

    def describe(self) -> str:
        return "respond"


@dataclass(frozen=True)
class ErrorResponse(Action):
    """Answer with the API's response in which every ErrorCode (top level and per entry)
    is ``code`` (a number or a Kafka error name)."""

    code: int | str
    message: str | None = None

    def describe(self) -> str:
        return f"error:{resolve_error(self.code)}"


@dataclass(frozen=True)
class Delay(Action):
    """Wait ``ms`` on the broker's clock (virtual or real), or on the wall clock with
    ``real=True``, then do ``then``."""

    ms: int
    then: Action = field(default_factory=Continue)
    real: bool = False

    def __post_init__(self) -> None:
        if self.ms < 0:
            raise ValueError("a delay cannot be negative")

    def describe(self) -> str:
        return f"delay:{self.ms}ms{'(real)' if self.real else ''}>{self.then.describe()}"


@dataclass(frozen=True)
class Hold(Action):
    """Wait until ``gate`` opens (or ``timeout_ms`` passes on the broker's clock), then do
    ``then``."""

    gate: Gate
    then: Action = field(default_factory=Continue)
    timeout_ms: int | None = None

    def describe(self) -> str:
        return f"hold:{self.gate.name}>{self.then.describe()}"


@dataclass(frozen=True)
class Drop(Action):
    """Send no reply; the connection stays open and serves its next request."""

    def describe(self) -> str:
        return "drop"


@dataclass(frozen=True)
class Close(Action):
    """Close the connection without replying."""

    def describe(self) -> str:
        return "close"


@dataclass(frozen=True)
class Defer(Action):
    """Decide later: await ``decide()`` (on the broker's loop) and do the action it
    returns. For hooks whose answer depends on what other connections do next (a
    broker-side script releasing a response once the requests before it have arrived)."""

    decide: Callable[[], Awaitable[Action]]
    label: str = "defer"

    def describe(self) -> str:
        return self.label


class Gate:
    """A one-way latch a held call waits on. ``open()`` may be called from any thread."""

    def __init__(self, name: str = "gate") -> None:
        self.name = name
        self._opened = False
        self._lock = threading.Lock()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    @property
    def opened(self) -> bool:
        return self._opened

    def open(self) -> None:
        with self._lock:
            self._opened = True
            waiters, self._waiters = self._waiters, []
        for loop, fut in waiters:
            loop.call_soon_threadsafe(_resolve, fut)

    async def wait(self) -> None:
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._opened:
                return
            fut: asyncio.Future[None] = loop.create_future()
            self._waiters.append((loop, fut))
        await fut


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


# ---------------------------------------------------------------------------- calls

@dataclass
class Call:
    """One request (and, on the response side, its response) as a hook sees it."""

    registry: Registry
    conn: int | str
    api_key: int
    version: int
    correlation_id: int
    client_id: str | None
    request: Struct  # edit in place and return Continue() to change what the coordinator sees
    now_ms: int  # the broker's clock
    side: str = "request"
    response: Struct | None = None  # response side only; edit in place or replace
    peer: str = ""
    label: str | None = None  # set by a hook to name itself in the transcript (e.g. a fault)
    _keep: bool = False

    @property
    def api(self) -> str:
        return self.registry.api_name(self.api_key)

    def keep(self) -> None:
        """Keep the hook installed although it acts this time (kfake's KeepControl)."""
        self._keep = True

    def error_response(self, code: int | str, message: str | None = None) -> Struct:
        return error_response(self.registry, self.api_key, self.version, self.request, code, message)

    def field(self, path: str) -> Any:
        """A request field by spec path (``MemberId``, ``Protocols[0].Name``) for predicates."""
        from .matchers import get_path
        return get_path(self.request.to_json(), path)


HookFn = Callable[[Call], "Action | None"]


@dataclass(eq=False)
class Hook:
    fn: HookFn
    api_keys: frozenset[int] | None  # None: every API
    side: str
    keep: bool
    name: str
    fired: int = 0  # how many times it acted
    seen: int = 0  # how many calls it was offered
    active: bool = True


class Hooks:
    """The ordered hooks of one broker. Safe to add and remove from any thread."""

    def __init__(self, registry: Registry | None = None) -> None:
        self.registry = registry if registry is not None else default_registry()
        self._hooks: list[Hook] = []
        self._lock = threading.Lock()

    def add(self, fn: HookFn, api: int | str | Iterable[int | str] | None = None, *,
            side: str = "request", keep: bool = False, name: str | None = None) -> Hook:
        """Install ``fn`` for ``api`` (a key, a name, several, or None for every API)."""
        if side not in SIDES:
            raise ValueError(f"side must be one of {SIDES}, got {side!r}")
        keys = None if api is None else frozenset(self._key(a) for a in (
            [api] if isinstance(api, (int, str)) else api))
        hook = Hook(fn, keys, side, keep, name or str(getattr(fn, "__name__", "hook")))
        with self._lock:
            self._hooks.append(hook)
        return hook

    def _key(self, api: int | str) -> int:
        if isinstance(api, int):
            return api
        try:
            return self.registry.by_api_name(api)
        except KeyError as e:
            raise ValueError(str(e.args[0])) from None

    def remove(self, hook: Hook) -> None:
        with self._lock:
            hook.active = False
            if hook in self._hooks:
                self._hooks.remove(hook)

    def clear(self) -> None:
        with self._lock:
            for h in self._hooks:
                h.active = False
            self._hooks.clear()

    def __len__(self) -> int:
        return len(self._hooks)

    def __iter__(self) -> Any:
        return iter(list(self._hooks))

    def decide(self, call: Call) -> tuple[Action | None, Hook | None]:
        """The first hook (in order) that acts on ``call``, and its action."""
        with self._lock:
            candidates = [h for h in self._hooks
                          if h.side == call.side and (h.api_keys is None or call.api_key in h.api_keys)]
        for hook in candidates:
            if not hook.active:
                continue  # removed by an earlier hook of this same call
            hook.seen += 1
            call._keep = False
            call.label = None
            action = hook.fn(call)
            if action is None:
                continue
            if not isinstance(action, Action):
                raise TypeError(f"hook {hook.name} returned {action!r}, not an Action or None")
            hook.fired += 1
            if not (hook.keep or call._keep):
                self.remove(hook)
            return action, hook
        return None, None
