"""The part of Connect's REST API that says what a worker runs, for a bundled worker:
``GET /connectors`` (the configured connectors' names) and ``GET /connectors/NAME/status``
(the connector instance and the tasks this worker owns, RUNNING with its ``worker_id``
``127.0.0.1:PORT``, as Connect reports them). The worker suite reads it to see what a
worker runs (targets with the ``rest`` capability).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Unit = tuple[str, int]  # (connector, task); task -1 is the connector instance


def connector_status(name: str, tasks: list[int], owned: set[Unit], worker_id: str) -> dict[str, Any]:
    """Connect's status document of connector ``name``, as far as this worker runs it."""
    mine = (name, -1) in owned
    return {"name": name,
            "connector": {"state": "RUNNING" if mine else "UNASSIGNED", "worker_id": worker_id if mine else ""},
            "tasks": [{"id": t, "state": "RUNNING", "worker_id": worker_id} for t in tasks if (name, t) in owned],
            "type": "unknown"}


def serve_status(port: int, units: list[Unit], owned: Callable[[], set[Unit]]) -> ThreadingHTTPServer:
    """Serve the status of ``units`` (``owned()``: what runs now) on 127.0.0.1:``port`` from
    a daemon thread; ``shutdown()`` stops it."""
    worker_id = f"127.0.0.1:{port}"
    tasks: dict[str, list[int]] = {}
    for name, task in sorted(units):
        tasks.setdefault(name, [])
        if task >= 0:
            tasks[name].append(task)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            parts = self.path.split("?")[0].strip("/").split("/")
            if parts == ["connectors"]:
                self._answer(200, sorted(tasks))
            elif len(parts) == 3 and parts[0] == "connectors" and parts[2] == "status" and parts[1] in tasks:
                self._answer(200, connector_status(parts[1], tasks[parts[1]], owned(), worker_id))
            else:
                self._answer(404, {"error_code": 404, "message": f"no resource {self.path}"})

        def _answer(self, code: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass  # the worker's stdout carries its own event lines only

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, name="rest-status", daemon=True).start()
    return server
