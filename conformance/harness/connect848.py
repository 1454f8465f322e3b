"""Scripted workers of the draft's ``connect`` group type (KIP-848 for Connect): the suite's
side of ConnectGroupHeartbeat / PrepareAssignment / InstallAssignment.

Message shapes follow ``schemas/draft/`` (ERRATA 2-10); the API keys and the two
project-numbered error codes come from the target (``[api_keys]`` / ``[error_codes]``), so
a coordinator that numbered them differently is tested under its own numbers.
"""

from __future__ import annotations

import copy
import dataclasses
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from fakebroker.protocol import Registry, Struct, default_registry
from fakebroker.testing.client import ScriptedClient

from fakebroker.connect.embedded import metadata_bytes

APIS = ("ConnectGroupHeartbeat", "ConnectGroupPrepareAssignment", "ConnectGroupInstallAssignment")
Task = tuple[str, int]


@dataclass(frozen=True)
class Work:
    """A worker's connectors and tasks (the draft's ConnectorsAndTasks)."""

    connectors: frozenset[str] = frozenset()
    tasks: frozenset[Task] = frozenset()

    @staticmethod
    def of(connectors: Iterable[str] = (), tasks: Iterable[Task] = ()) -> Work:
        return Work(frozenset(connectors), frozenset(tasks))

    def __or__(self, other: Work) -> Work:
        return Work(self.connectors | other.connectors, self.tasks | other.tasks)

    def __sub__(self, other: Work) -> Work:
        return Work(self.connectors - other.connectors, self.tasks - other.tasks)

    def __le__(self, other: Work) -> bool:
        return self.connectors <= other.connectors and self.tasks <= other.tasks

    def __bool__(self) -> bool:
        return bool(self.connectors or self.tasks)

    def show(self) -> list[str]:
        return sorted(self.connectors) + [f"{c}/{t}" for c, t in sorted(self.tasks)]


@dataclass
class Assignor:
    name: str = "connect"
    minimum: int = 0
    maximum: int = 2
    version: int = 2
    reason: int = 0
    metadata: bytes = b""


def registry_for(api_keys: dict[str, int]) -> Registry:
    """The default registry, or a copy whose draft APIs use the target's API keys."""
    reg = default_registry()
    if all(reg[f"{api}Request"].api_key == key for api, key in api_keys.items()):
        return reg
    specs = []
    for mt in reg.types.values():
        spec = mt.spec
        api = spec.name.removesuffix("Request").removesuffix("Response")
        if api in api_keys and spec.type in ("request", "response"):
            spec = dataclasses.replace(spec, api_key=api_keys[api])
        specs.append(copy.copy(spec))
    return Registry(specs)


@dataclass
class DraftWorker:
    """One scripted worker: its id (chosen by itself, ERRATA 13), epoch, assignors and work."""

    client: ScriptedClient  # the case's (a refused or missing answer is a Violation)
    group_id: str
    registry: Registry
    rebalance_timeout_ms: int = 60_000
    member_id: str = field(default_factory=lambda: f"worker-{uuid.uuid4()}")
    instance_id: str | None = None
    epoch: int = 0
    assignors: list[Assignor] = field(default_factory=lambda: [Assignor()])
    owned: Work = field(default_factory=Work)
    last: Any = None

    def __post_init__(self) -> None:
        for a in self.assignors:
            if not a.metadata:
                a.metadata = metadata_bytes(min(max(a.version, 0), 2), f"http://{self.name}:8083/", 1)

    # ---------------------------------------------------------------- bodies

    def _work_struct(self, mt: Any, work: Work | None) -> Any:
        if work is None:
            return None
        cat_cls = mt.classes["ConnectorsAndTasks"]
        task_cls = mt.classes["ConnectorTaskId"]
        return cat_cls(connectors=sorted(work.connectors),
                       tasks=[task_cls(connector_id=c, task_id=t) for c, t in sorted(work.tasks)])

    def heartbeat_body(self, *, full: bool = True, **over: Any) -> Struct:
        mt = self.registry["ConnectGroupHeartbeatRequest"]
        acls = mt.classes["Assignor"]
        fields: dict[str, Any] = dict(group_id=self.group_id, member_id=self.member_id, member_epoch=self.epoch)
        if full:
            fields.update(
                instance_id=self.instance_id, rebalance_timeout_ms=self.rebalance_timeout_ms,
                server_assignor=None,
                client_assignors=[acls(name=a.name, minimum_version=a.minimum, maximum_version=a.maximum,
                                       reason=a.reason, version=a.version, metadata=a.metadata)
                                  for a in self.assignors],
                connectors_and_tasks=self._work_struct(mt, self.owned))
        else:
            fields.update(connectors_and_tasks=self._work_struct(mt, self.owned))
        owned = over.pop("owned", None)
        if owned is not None:
            fields["connectors_and_tasks"] = self._work_struct(mt, owned)
        fields.update(over)
        return mt.new(**fields)

    @property
    def name(self) -> str:
        return self.client.client_id

    async def _send(self, api: str, body: Struct) -> Any:
        return await self.client.send_body(api, body, 0).response()

    # ---------------------------------------------------------------- the three APIs

    async def heartbeat(self, *, full: bool = False, apply: bool = True, **over: Any) -> Any:
        """One heartbeat; with ``apply`` the worker takes the answer as a Connect worker
        would (new epoch; revoked work released at once, new work started)."""
        # Epoch 0 means joining (Request Validation): such a heartbeat carries every field.
        full = full or self.epoch == 0
        r = await self._send("ConnectGroupHeartbeat", self.heartbeat_body(full=full, **over))
        self.last = r
        if apply and r.error_code in (0, self._compute_code):
            self.epoch = r.member_epoch
            if r.assignment is not None:
                self.owned = work_of(r.assignment.connectors_and_tasks)
        return r

    async def join(self, **over: Any) -> Any:
        self.epoch = 0
        return await self.heartbeat(full=True, **over)

    async def leave(self) -> Any:
        r = await self._send("ConnectGroupHeartbeat", self.heartbeat_body(full=False, member_epoch=-1))
        return r

    async def prepare(self, **over: Any) -> Any:
        body = self.registry["ConnectGroupPrepareAssignmentRequest"].new(
            **{"group_id": self.group_id, "member_id": self.member_id, "member_epoch": self.epoch, **over})
        return await self._send("ConnectGroupPrepareAssignment", body)

    async def install(self, group_epoch: int, assignment: dict[str, Work], *, error: int = 0,
                      raw_tasks: dict[str, list[Task]] | None = None,
                      payloads: dict[str, tuple[int, bytes]] | None = None, **over: Any) -> Any:
        """Install ``assignment``; ``payloads`` gives members their own (Version, Metadata)
        (default: Version 2 and bytes naming the member)."""
        mt = self.registry["ConnectGroupInstallAssignmentRequest"]
        mcls = mt.classes["Member"]
        members = []
        for member_id, work in assignment.items():
            cat = self._work_struct(mt, work)
            if raw_tasks and member_id in raw_tasks:
                tcls = mt.classes["ConnectorTaskId"]
                cat.tasks = [tcls(connector_id=c, task_id=t) for c, t in raw_tasks[member_id]]
            version, metadata = (payloads or {}).get(member_id, (2, b"assignment-of-" + member_id.encode()))
            members.append(mcls(member_id=member_id, connectors_and_tasks=cat, version=version,
                                metadata=metadata))
        body = mt.new(**{"group_id": self.group_id, "member_id": self.member_id, "member_epoch": self.epoch,
                         "group_epoch": group_epoch, "error": error, "members": members, **over})
        return await self._send("ConnectGroupInstallAssignment", body)

    _compute_code = 1000  # replaced per target by DraftContext


def work_of(cat: Any) -> Work:
    if cat is None:
        return Work()
    return Work.of(cat.connectors, [(t.connector_id, t.task_id) for t in cat.tasks])
