"""The bundled worker's REST status (conformance/workers/rest_status.py) reads as Connect's
does to the worker suite: what the worker owns RUNNING under its worker id, nothing else."""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
import urllib.error
import urllib.request

import pytest

from conformance.harness.outcomes import Broken
from conformance.harness.worker import WorkerContext, free_port
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
        worker_id = "w"

    reader = SimpleNamespace(unit_states={})
    try:
        assert asyncio.run(WorkerContext.running(reader, W())) == owned  # type: ignore[arg-type]
        assert reader.unit_states["w"][("conn-b", -1)] == ("UNASSIGNED", "")
    finally:
        server.shutdown()


class _Status(BaseHTTPRequestHandler):
    """Connect's REST status as a real worker answers it: conn-a RUNNING here, its task 0
    stopped (UNASSIGNED), task 1 RUNNING on another worker; conn-b's task FAILED here."""
    def do_GET(self) -> None:
        me = f"127.0.0.1:{self.server.server_port}"
        body = {"/connectors": ["conn-a", "conn-b"],
                "/connectors/conn-a/status": {"connector": {"state": "RUNNING", "worker_id": me}, "tasks": [
                    {"id": 0, "state": "UNASSIGNED", "worker_id": me},
                    {"id": 1, "state": "RUNNING", "worker_id": "127.0.0.1:1"}]},
                "/connectors/conn-b/status": {"connector": {"state": "RUNNING", "worker_id": me}, "tasks": [
                    {"id": 0, "state": "FAILED", "worker_id": me,
                     "trace": "java.lang.NumberFormatException: null\n\tat java.base/..."}]}}[self.path]
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


def test_a_unit_failed_on_the_worker_is_broken_and_a_missing_one_is_told_apart() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Status)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    class W:
        rest_port = server.server_port
        worker_id = "w"

        def alive(self) -> bool:
            return True

    reader = SimpleNamespace(unit_states={})
    try:
        with pytest.raises(Broken) as e:
            asyncio.run(WorkerContext.running(reader, W()))  # type: ignore[arg-type]
        assert "not a protocol verdict" in str(e.value)
        assert "('conn-b', 0) FAILED on the worker: java.lang.NumberFormatException: null" in str(e.value)
        told = WorkerContext.where_units_are(reader, W(), {("conn-a", 0), ("conn-a", 1), ("conn-c", 0)})  # type: ignore[arg-type]
        assert told == ("('conn-a', 0) UNASSIGNED on the worker; ('conn-a', 1) RUNNING on 127.0.0.1:1; "
                        "('conn-c', 0) not listed")
    finally:
        server.shutdown()
