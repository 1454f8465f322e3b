"""The event loop a serving process runs on.

uvloop (libuv's loop, in C) by default: the broker is one thread, and most of its CPU per
request is the loop's own work (the read and write callbacks, the socket calls, the
handles), which uvloop does for about half what asyncio's pure-Python selector loop
costs. The server code uses only the asyncio API, so it runs on either loop (the tests
run it inside pytest's asyncio loop); ``asyncio`` selects the standard loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import uvloop

T = TypeVar("T")
LOOPS: dict[str, Callable[[], asyncio.AbstractEventLoop] | None] = {
    "uvloop": uvloop.new_event_loop,
    "asyncio": None,  # asyncio's default for the platform
}
DEFAULT_LOOP = "uvloop"


def run(main: Coroutine[Any, Any, T], loop: str = DEFAULT_LOOP) -> T:
    """``asyncio.run(main)`` on the loop named ``loop`` (a key of ``LOOPS``)."""
    with asyncio.Runner(loop_factory=LOOPS[loop]) as runner:
        return runner.run(main)
