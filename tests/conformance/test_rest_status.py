"""The bundled worker's REST status (conformance/workers/rest_status.py) reads as Connect's
does to the worker suite: what the worker owns RUNNING under its worker id, nothing else."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request

import pytest

from conformance.suites.worker.framework import WorkerContext, free_port
from conformance.workers.rest_status import serve_status


def get(port: int, path: str) -> object:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
        return json.loads(r.read().decode())


def test_status_follows_what_the_worker_owns() -> None:
    port = free_port()
    owned = {("conn-a", -1), ("conn-a", 1)}
    server = serve_status(port, [("conn-a", -1), ("conn-a", 0), ("conn-a", 1), ("conn-b", -1)], lambda: set(owned))
    try:
        assert get(port, "/connectors") == ["conn-a", "conn-b"]
        a = get(port, "/connectors/conn-a/status")
        me = f"127.0.0.1:{port}"
        assert a["connector"] == {"state": "RUNNING", "worker_id": me}
        assert a["tasks"] == [{"id": 1, "state": "RUNNING", "worker_id": me}]
        assert get(port, "/connectors/conn-b/status")["connector"]["state"] == "UNASSIGNED"
        owned.clear()
        assert get(port, "/connectors/conn-a/status")["tasks"] == []
        with pytest.raises(urllib.error.HTTPError) as e:
            get(port, "/connectors/nope/status")
        assert e.value.code == 404
    finally:
        server.shutdown()


def test_the_suite_reads_it_as_the_units_running() -> None:
    """WorkerContext.running, the suite's reader, sees exactly the owned units."""
    port = free_port()
    owned = {("conn-a", -1), ("conn-b", 0)}
    server = serve_status(port, [("conn-a", -1), ("conn-b", -1), ("conn-b", 0)], lambda: owned)

    class W:
        rest_port = port

    try:
        assert asyncio.run(WorkerContext.running(None, W())) == owned  # type: ignore[arg-type]
    finally:
        server.shutdown()
