"""The bundled draft worker's view of its work: the connectors and tasks a heartbeat reports
and an assignment hands out (the draft's ConnectorsAndTasks), as sets it can add and take away.

The worker is an implementation under test: it keeps its own model of what it runs and
shares none with the suite that judges it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

Task = tuple[str, int]  # (connector, task number)


@dataclass(frozen=True)
class Work:
    connectors: frozenset[str] = frozenset()
    tasks: frozenset[Task] = frozenset()

    @staticmethod
    def of(connectors: Iterable[str] = (), tasks: Iterable[Task] = ()) -> Work:
        return Work(frozenset(connectors), frozenset(tasks))

    def __or__(self, other: Work) -> Work:
        return Work(self.connectors | other.connectors, self.tasks | other.tasks)

    def __sub__(self, other: Work) -> Work:
        return Work(self.connectors - other.connectors, self.tasks - other.tasks)

    def __bool__(self) -> bool:
        return bool(self.connectors or self.tasks)

    def show(self) -> list[str]:
        """For the worker's log lines: connectors, then tasks as ``connector/n``."""
        return sorted(self.connectors) + [f"{c}/{n}" for c, n in sorted(self.tasks)]


def work_of(connectors_and_tasks: Any) -> Work:
    """A decoded ConnectorsAndTasks (None: nothing) as the worker's ``Work``."""
    if connectors_and_tasks is None:
        return Work()
    return Work.of(connectors_and_tasks.connectors,
                   [(t.connector_id, t.task_id) for t in connectors_and_tasks.tasks])
