"""Big request frames are handled without starving the event loop.

Decoding costs microseconds per array element: a maximal frame (8 MiB of empty JoinGroup
protocols, ~1.4 million elements) takes seconds, and so do building the coordinator's view
of it and, for a tenth of that, freeing it. On the loop, that would be every other
client's latency. So for a frame of at least ``OFFLOAD_DECODE_BYTES``:

- decoding and ``prepare`` (the per-element work its consumer needs) run on a thread;
- its objects are freed on that thread, once the loop has dropped the request, its big
  arrays ``FREE_SLICE`` items at a time (freeing runs no bytecode, so the thread would keep
  the GIL for a whole array otherwise: ~100 ms);
- that thread is one for all connections, so at most one CPU-bound thread competes with
  the loop for the GIL, and big frames' objects do not pile up: those of a frame being
  freed are gone before the next big frame is decoded;
- while either runs, the GIL switch interval drops from 5 ms to ``SWITCH_INTERVAL_S`` (the
  thread holds the GIL; the loop, which wants it once per iteration, waits up to one
  interval each time), and the cyclic garbage collector pauses;
- its objects are kept out of the collector's generations (``gc.freeze``) while they live:
  a collection walks every object in its generations holding the GIL, hundreds of
  milliseconds for these. Decoded messages hold no reference cycles to collect.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import gc
import sys
import threading
import weakref
from collections.abc import Callable
from typing import Any

from ..protocol import Registry, Struct
from ..protocol.framing import Request, decode_request

OFFLOAD_DECODE_BYTES = 64 * 1024
SWITCH_INTERVAL_S = 0.0002
FREE_SLICE = 4096


class _Quiet:
    """Counts big frames being decoded or freed (on any thread): the first in lowers the
    switch interval and pauses the collector, the last out restores both. It also counts
    big requests alive, whose objects stay frozen until the last is freed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._busy = 0
        self._alive = 0
        self._interval = 0.0
        self._gc_was_enabled = False

    def enter(self) -> None:
        with self._lock:
            if self._busy == 0:
                self._interval = sys.getswitchinterval()
                self._gc_was_enabled = gc.isenabled()
                sys.setswitchinterval(min(self._interval, SWITCH_INTERVAL_S))
                gc.disable()
            self._busy += 1

    def leave(self) -> None:
        with self._lock:
            self._busy -= 1
            if self._busy == 0:
                sys.setswitchinterval(self._interval)
                if self._gc_was_enabled:
                    gc.enable()

    def freeze(self) -> None:
        """Move every object tracked now (the new request's among them) out of reach of
        collections."""
        with self._lock:
            gc.freeze()
            self._alive += 1

    def thaw(self) -> None:
        with self._lock:
            self._alive -= 1
            if self._alive == 0:
                gc.unfreeze()  # the rest go back to the oldest generation


_quiet = _Quiet()


def _decode(registry: Registry, frame: bytes,
            prepare: Callable[[Request], Any] | None) -> tuple[Request, Any]:
    _quiet.enter()
    try:
        req = decode_request(registry, frame)
        prepared = prepare(req) if prepare is not None else None
        _quiet.freeze()
        # Registered here, not by the awaiting task: if that is cancelled meanwhile, the
        # request is still freed on a thread and its objects thawed.
        weakref.finalize(req, _release, [req.body, prepared])
        return req, prepared
    finally:
        _quiet.leave()


def big_sequences(roots: list[Any]) -> list[list[Any]]:
    """The items of every list or tuple of at least ``FREE_SLICE`` items reachable from
    ``roots`` through messages (and dataclasses), their fields and smaller sequences, one
    list per sequence. The items of a big sequence are not searched: each of them is
    small to free."""
    found: list[list[Any]] = []
    todo, seen = list(roots), set()
    while todo:
        o = todo.pop()
        if id(o) in seen:
            continue  # shared, or a cycle
        seen.add(id(o))
        if isinstance(o, (list, tuple)):
            if len(o) >= FREE_SLICE:
                found.append(list(o))
            else:
                todo.extend(o)
        elif isinstance(o, dict):
            todo.extend(o.values())
        elif isinstance(o, Struct) or (dataclasses.is_dataclass(o) and not isinstance(o, type)):
            todo.extend(r for r in gc.get_referents(o) if not isinstance(r, type))
    return found


def _free(keep: list[Any]) -> None:
    _quiet.enter()
    try:
        big = big_sequences(keep)
        keep.clear()  # cheap now: the items of its big sequences are still held in ``big``
        for items in big:
            while items:
                del items[-FREE_SLICE:]  # between slices, the loop can take the GIL
    finally:
        _quiet.leave()
        # Last, so that once nothing is frozen the switch interval and the collector are
        # back too (a caller waiting for the thaw then sees them restored).
        _quiet.thaw()


def _release(keep: list[Any]) -> None:
    """A big request was dropped (this runs as it is freed, on the thread that dropped
    it): free what it held on a thread. That thread needs the GIL first, which the
    dropping thread keeps while it drops the rest of its references (microseconds; the
    switch interval is at least ``SWITCH_INTERVAL_S``), so it frees the last of them."""
    try:
        _WORKER.submit(_free, keep)
    except RuntimeError:  # the interpreter is exiting
        _free(keep)


# Not a loop's executor: the loop may be gone when a request is freed (asyncio.run's end).
_WORKER = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="fakebroker-big-frames")


async def decode(registry: Registry, frame: bytes,
                 prepare: Callable[[Request], Any] | None = None) -> tuple[Request, Any]:
    """Decode a request frame; for a big one also ``prepare(request)`` (which must read
    only the request), both on the big-frame thread. Returns the request and what ``prepare``
    made (None for a small frame: its consumer builds that itself, cheaply).
    Raises ``DecodeError`` as ``decode_request`` does."""
    if len(frame) < OFFLOAD_DECODE_BYTES:
        return decode_request(registry, frame), None
    return await asyncio.wrap_future(_WORKER.submit(_decode, registry, frame, prepare))
