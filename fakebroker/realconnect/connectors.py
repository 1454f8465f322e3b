"""Connectors for a real Connect worker to run: file connectors shipped with Kafka
(``connect-file``), created through the worker's REST API.

A spec ``conn-a:2,conn-b:1`` (the same one the bundled Python workers take) means two
connectors: ``conn-a`` with 2 tasks and ``conn-b`` with 1. A connector asking for more than
one task is a ``FileStreamSinkConnector`` (it starts ``tasks.max`` tasks); a one-task
connector is a ``FileStreamSourceConnector`` reading an empty file (it only ever starts one).
Both point at one topic of the group's own, so they never touch anything else; neither
produces a record. Their files live in the system's temporary directory, named after the
topic: every worker that may run a task finds them, whichever worker created the connector.

``POST /connectors`` creates a connector only if it does not exist (409 otherwise), so
every worker of a group, or of several groups sharing their internal topics, may try
without rewriting a config (which would start a rebalance). A follower forwards it to the
leader. It fails while the group rebalances or while the leader is a member that serves no
REST (a scripted peer); ``create_connectors`` retries until its deadline and reports what it
could not create instead of raising.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
TASK_CLASS = {SINK: "org.apache.kafka.connect.file.FileStreamSinkTask",
              SOURCE: "org.apache.kafka.connect.file.FileStreamSourceTask"}
SOURCE_BATCH_SIZE = 2000  # FileStreamSourceConnector's batch.size default
_SPEC = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*):([1-9][0-9]*)$")


@dataclass(frozen=True)
class ConnectorSpec:
    name: str
    tasks: int

    def config(self, topic: str, datadir: Path) -> dict[str, str]:
        if self.tasks > 1:
            return {"connector.class": SINK, "tasks.max": str(self.tasks), "topics": topic,
                    "file": str(datadir / f"{topic}-{self.name}.out")}
        empty = datadir / f"{topic}-{self.name}.in"
        empty.touch()
        return {"connector.class": SOURCE, "tasks.max": "1", "topic": topic, "file": str(empty)}


def parse_connectors(spec: str) -> list[ConnectorSpec]:
    """``"conn-a:2,conn-b:1"`` -> specs; a ValueError names the item that is malformed."""
    out: list[ConnectorSpec] = []
    for item in filter(None, (s.strip() for s in spec.split(","))):
        m = _SPEC.match(item)
        if m is None:
            raise ValueError(f"connector {item!r}: expected NAME:TASKS with TASKS >= 1")
        out.append(ConnectorSpec(m.group(1), int(m.group(2))))
    names = [c.name for c in out]
    if len(set(names)) != len(names):
        raise ValueError(f"connector names repeat in {spec!r}")
    return out


def task_config(connector: dict[str, str], version: tuple[int, int, int]) -> dict[str, str]:
    """The config a worker of ``version`` writes for one task of a file connector: since 3.4.0
    the connector's whole config (KAFKA-13809); before, only what ``taskConfigs`` picked
    (the source's file, topic and batch.size, which its task parses and dies without; the
    sink's file, and the worker adds its topics). The worker adds ``task.class`` either way."""
    cls = connector["connector.class"]
    if version >= (3, 4, 0):
        picked = dict(connector)
    elif cls == SOURCE:
        picked = {"file": connector["file"], "topic": connector["topic"], "batch.size": str(SOURCE_BATCH_SIZE)}
    else:
        picked = {"file": connector["file"], "topics": connector["topics"]}
    return {**picked, "task.class": TASK_CLASS[cls]}


def config_records(specs: list[ConnectorSpec], topic: str, datadir: Path,
                   version: tuple[int, int, int]) -> list[tuple[bytes, bytes]]:
    """The config-topic records (key, value) a Connect worker of ``version`` writes when
    ``specs`` are created through its REST API, in its order: each connector's config (the
    REST layer adds ``name``), then, connector by connector, its task configs
    (``task_config``) and the commit record that names how many there are. Keys are
    ``KafkaConfigBackingStore``'s; values are JSON as its internal converter (JsonConverter,
    no schemas) writes them."""
    def record(key: str, value: object) -> tuple[bytes, bytes]:
        return key.encode(), json.dumps(value, separators=(",", ":")).encode()
    configs = {c.name: {**c.config(topic, datadir), "name": c.name} for c in specs}
    out = [record(f"connector-{name}", {"properties": config}) for name, config in configs.items()]
    for c in specs:
        task = task_config(configs[c.name], version)
        out += [record(f"task-{c.name}-{i}", {"properties": task}) for i in range(c.tasks)]
        out.append(record(f"commit-{c.name}", {"tasks": c.tasks}))
    return out


Requester = Callable[[str, str, Any], tuple[int, Any]]


def create_connectors(request: Requester, specs: list[ConnectorSpec], topic: str, datadir: Path,
                      deadline_s: float, log: Callable[[str], None],
                      stopped: Callable[[], bool] = lambda: False) -> list[str]:
    """PUT each connector's config until accepted or ``deadline_s`` passes (or ``stopped``);
    returns the names not created."""
    pending = list(specs)
    try:  # known already (read from the config topic): nothing to ask the leader
        status, known = request("GET", "/connectors", None)
        if status == 200 and isinstance(known, list):
            for c in [c for c in pending if c.name in known]:
                log(f"connector {c.name} already exists")
                pending.remove(c)
    except OSError:
        pass
    end = time.monotonic() + deadline_s
    while pending and time.monotonic() < end and not stopped():
        spec = pending[0]
        try:
            status, body = request("POST", "/connectors",
                                   {"name": spec.name, "config": spec.config(topic, datadir)})
        except OSError as e:
            status, body = 0, str(e)
        if status in (200, 201, 409):
            log(f"connector {spec.name} ({spec.tasks} task(s)) "
                f"{'already exists' if status == 409 else 'created'}")
            pending.pop(0)
            continue
        log(f"connector {spec.name}: POST answered {status}: {body}; retrying")
        time.sleep(1.0)  # real worker, real time: the group settles between tries
    return [c.name for c in pending]
