"""Exchanges that wait: ``Parked`` runs one outside a task (resumed in the callbacks of what
it waits on), ``Waiting`` marks a wait for ``FakeBroker.quiet``."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from .connection import Connection


class Parked:
    """An exchange that ran outside a task up to a wait, going on without one: its
    coroutine is resumed in the callback of the future it waits on (a Task would add two
    loop turns, its own creation and two wrappers to every parked JoinGroup and SyncGroup;
    a rebalance parks about one request per member). ``done`` stands for the exchange in
    ``Connection.exchange`` and the broker's tasks: ``stop`` cancels it, which closes the
    coroutine (its ``finally`` blocks run) and ends the connection, as for a task."""

    __slots__ = ("broker", "conn", "coro", "done")

    def __init__(self, broker: Any, conn: Connection,
                 coro: Coroutine[Any, Any, bytes | None]) -> None:
        self.broker, self.conn, self.coro = broker, conn, coro
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.done.add_done_callback(self._cancelled)
        conn.exchange = self.done
        broker._tasks.add(self.done)

    def wait(self, awaited: Any) -> None:
        """Resume when ``awaited`` (what the coroutine yielded, as to a Task) is done."""
        if asyncio.isfuture(awaited):
            awaited._asyncio_future_blocking = False  # (what a Task does with what it gets)
            awaited.add_done_callback(self._step)
        elif awaited is None:  # a bare yield (sleep(0)): go on at the next loop turn
            asyncio.get_running_loop().call_soon(self._step, None)
        else:
            asyncio.get_running_loop().call_soon(
                self._step, None, RuntimeError(f"an exchange yielded {awaited!r}, not a future"))

    def _step(self, _future: Any, error: BaseException | None = None) -> None:
        if self.done.done():
            return  # cancelled meanwhile: the coroutine is closed
        broker, conn = self.broker, self.conn
        try:
            awaited = self.coro.send(None) if error is None else self.coro.throw(error)
        except StopIteration as stop:
            self._over()
            broker._answered(conn, stop.value)
        except asyncio.CancelledError:  # what it waited on was cancelled: as a cancelled task
            self._over()
            broker._abandoned(conn)
            return
        except Exception:  # noqa: BLE001 - a bug must cost one connection, never the server
            self._over()
            broker._answered(conn, error=True)
        else:
            self.wait(awaited)
            return
        broker._serve_next(conn)

    def _over(self) -> None:
        self.done.remove_done_callback(self._cancelled)
        self.done.set_result(None)
        self.broker._tasks.discard(self.done)
        self.conn.exchange = None

    def _cancelled(self, done: asyncio.Future[None]) -> None:
        """``stop`` cancelled the exchange."""
        broker, conn = self.broker, self.conn
        broker._tasks.discard(done)
        conn.exchange = None
        self.coro.close()
        broker._abandoned(conn)


class Waiting:
    """``FakeBroker._waiting``'s context manager (a class: every parked request enters one)."""

    __slots__ = ("broker", "ready", "conn", "token")

    def __init__(self, broker: Any, ready: Any, conn: Connection | None) -> None:
        self.broker, self.ready, self.conn = broker, ready, conn

    def __enter__(self) -> None:
        broker, conn = self.broker, self.conn
        self.token = next(broker._wait_ids)
        broker._waits[self.token] = self.ready
        broker._busy -= 1
        if conn is not None:
            conn.waiting += 1
            if conn.peer_gone:
                broker._close(conn, "closed by the client while its request waited")

    def __exit__(self, *exc: object) -> None:
        broker, conn = self.broker, self.conn
        broker._busy += 1
        del broker._waits[self.token]
        if conn is not None:
            conn.waiting -= 1
