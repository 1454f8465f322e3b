"""The bundled draft worker's view of its work: one set of tagged units, ``("c", connector)``
for a connector and ``("t", (connector, task))`` for a task, as its heartbeats report them
and its assignments hand them out (the draft's ConnectorsAndTasks). Set operations are
the worker's arithmetic: what it was given and not yet running, what it must let go.

The worker is an implementation under test: it keeps its own model of what it runs and
shares none with the suite that judges it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

Unit = tuple[str, Any]
Work = frozenset[Unit]
NOTHING: Work = frozenset()


def new_work(connectors: Iterable[str] = (), tasks: Iterable[tuple[str, int]] = ()) -> Work:
    return frozenset([("c", c) for c in connectors] + [("t", t) for t in tasks])


def units(owned: Work) -> list[Unit]:
    """Connectors first, then tasks, each sorted: the order the worker lists and deals them."""
    return sorted(owned)


def connectors_of(owned: Work) -> list[str]:
    return [u for kind, u in units(owned) if kind == "c"]


def tasks_of(owned: Work) -> list[tuple[str, int]]:
    return [u for kind, u in units(owned) if kind == "t"]


def show(owned: Work) -> list[str]:
    """For the worker's log lines: connectors, then tasks as ``connector/n``."""
    return connectors_of(owned) + [f"{c}/{n}" for c, n in tasks_of(owned)]


def work_of(connectors_and_tasks: Any) -> Work:
    """A decoded ConnectorsAndTasks (None: nothing) as the worker's ``Work``."""
    if connectors_and_tasks is None:
        return NOTHING
    return new_work(connectors_and_tasks.connectors,
                    [(t.connector_id, t.task_id) for t in connectors_and_tasks.tasks])
