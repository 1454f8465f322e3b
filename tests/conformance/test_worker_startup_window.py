"""A window a case gives the worker opens no earlier than the worker's first request: a
worker process starved of CPU may take longer to start than the window is long, and its
start-up is bounded by the target's ``startup_timeout_s``, not by the case's window."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from conformance.catalogue.requirements import default_catalogue
from conformance.harness.worker import WorkerSession
from conformance.harness.target import load_target
from fakebroker.script.recorder import Recorder

# A "worker" that sends one ApiVersions (v0, its client id the worker id) after argv[3]
# seconds, then idles: a process whose start-up took that long.
LATE_WORKER = """\
import socket, struct, sys, time
time.sleep(float(sys.argv[3]))
host, port = sys.argv[1].rsplit(":", 1)
s = socket.create_connection((host, int(port)))
client = sys.argv[2].encode()
body = struct.pack(">hhih", 18, 0, 1, len(client)) + client
s.sendall(struct.pack(">i", len(body)) + body)
s.recv(4096)
time.sleep(60)
"""
SLEEP_S = 1.5


def target(tmp_path: Path, sleep_s: float, startup_timeout_s: float = 30.0) -> Path:
    script = tmp_path / "late_worker.py"
    script.write_text(LATE_WORKER)
    path = tmp_path / "late.toml"
    path.write_text(f'name = "late"\nkind = "worker"\nprotocols = ["classic"]\n'
                    f'[start]\ncommand = "{{python}} {script} {{bootstrap}} {{worker_id}} {sleep_s}"\n'
                    f'[timing]\nclock = "real"\nstartup_timeout_s = {startup_timeout_s}\n')
    return path


def run(path: Path, case):  # type: ignore[no-untyped-def]
    session = WorkerSession.start(load_target(path))
    try:
        async def main():  # type: ignore[no-untyped-def]
            ctx = session.context(default_catalogue()["CLS-W-01"], Recorder())
            try:
                return await case(ctx)
            finally:
                await ctx.close()
        return asyncio.run(main())
    finally:
        session.stop()


def test_a_window_opens_once_the_worker_sent_its_first_request(tmp_path: Path) -> None:
    async def case(ctx):  # type: ignore[no-untyped-def]
        w = await ctx.start_worker()
        first = await ctx.maybe_next_request(w, "ApiVersions", within_ms=300, where=lambda s: True)
        t0 = time.monotonic()
        # A window after the first request is not stretched by the start-up: 300 ms, nothing.
        nothing = await ctx.maybe_next_request(w, "JoinGroup", within_ms=300)
        return w, first, time.monotonic() - t0, nothing
    w, first, took, nothing = run(target(tmp_path, SLEEP_S), case)
    assert first is not None and first.client_id == w.worker_id
    assert first.t_request - w.started >= SLEEP_S  # found after the start-up, by a 300 ms window
    assert nothing is None and 0.3 <= took < SLEEP_S


def test_a_worker_that_never_sends_meets_its_window_after_the_startup_timeout(tmp_path: Path) -> None:
    async def case(ctx):  # type: ignore[no-untyped-def]
        w = await ctx.start_worker()
        found = await ctx.maybe_next_request(w, "ApiVersions", within_ms=300, where=lambda s: True)
        return found, time.monotonic() - w.started
    found, took = run(target(tmp_path, 60, startup_timeout_s=1.0), case)
    assert found is None
    assert 1.3 <= took < 10  # the 1 s start-up bound, then the 300 ms window
