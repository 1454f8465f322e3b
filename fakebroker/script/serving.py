"""``fakebroker serve`` with scripting options: the same broker, plus a recorder, a fault
plan or a broker-side script. Inputs are checked before the socket is bound."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

from ..protocol import Registry
from ..server import event_loop
from ..server.broker import FakeBroker
from ..server.serve_cli import build_broker, stop_on_signals, write_ready_file
from .recorder import Recorder
from ..exchange.transcript import Transcript

log = logging.getLogger("fakebroker")
EXIT_OK, EXIT_DIVERGED, EXIT_USAGE = 0, 1, 2


def _fail(message: str, status: int = EXIT_USAGE) -> int:
    print(f"fakebroker serve: {message}", file=sys.stderr)
    return status


def record_path(directory: Path) -> Path:
    """A new file name per run: UTC time, then the pid, so parallel runs never collide."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return directory / f"transcript-{stamp}-{os.getpid()}.jsonl"


def start_recording(broker: FakeBroker, directory: Path) -> Path:
    """Record the broker's run to a new file in ``directory``: streamed, each line flushed
    as written and nothing kept in memory, so a long run's memory stays flat."""
    directory.mkdir(parents=True, exist_ok=True)
    path = record_path(directory)
    broker.record(Recorder(path, origin="serve", keep=False))
    return path


def run(args: argparse.Namespace, registry: Registry) -> int:
    logging.basicConfig(level=args.log_level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from .documents import DocumentError
    from .faults import install, load_plan
    from .scripted import ScriptError, prepare
    from ..exchange.transcript import TranscriptError, load_transcript
    script = None
    if args.script is not None:
        if args.faults is not None:
            return _fail("--script plays the broker's half itself: it excludes --faults")
        if args.script_timeout <= 0:
            return _fail("--script-timeout must be positive")
        try:
            script = prepare(load_transcript("serve", args.script, registry))
        except (TranscriptError, ScriptError) as e:
            return _fail(f"invalid script: {e}")
    plan = None
    if args.faults is not None:
        try:
            plan = load_plan(args.faults, registry)
        except DocumentError as e:
            return _fail(f"invalid fault plan: {e}")
    try:
        broker = build_broker(args, registry, strict_topics=args.strict_topics)
    except ValueError as e:
        return _fail(str(e))
    if plan is not None:
        install(broker.hooks, plan)
        log.info("fault plan %s: %d fault(s)", args.faults, len(plan.faults))
    if args.record is not None:
        try:
            path = start_recording(broker, args.record)
        except OSError as e:
            return _fail(f"cannot record to {args.record}: {e.strerror or e}")
        log.info("recording to %s", path)
    try:
        if script is not None:
            return event_loop.run(_play(broker, script, registry, args), args.event_loop)
        event_loop.run(_serve(broker, args.ready_file), args.event_loop)
    except OSError as e:
        return _fail(f"cannot listen on {args.host}:{args.port}: {e.strerror or e}", 1)
    return EXIT_OK


async def _play(broker: FakeBroker, script: Transcript, registry: Registry,
                args: argparse.Namespace) -> int:
    """Serve the script until the client completes it, diverges or stalls."""
    from .scripted import ScriptPlayer, render_script_report
    player = ScriptPlayer(broker, script, registry, timeout_s=args.script_timeout)
    done: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def installed() -> None:
        player.install()
        assert player.done is not None
        report = await player.done
        print(render_script_report(report, registry), flush=True)
        if not done.done():
            done.set_result(EXIT_OK if report.ok else EXIT_DIVERGED)

    log.info("playing script %s (%d event(s))", args.script, len(script.events))
    status = await _serve(broker, args.ready_file, done, on_start=installed)
    player.stop()
    return status


async def _serve(broker: FakeBroker, ready_file: Path | None,
                 done: asyncio.Future[int] | None = None, on_start: Any = None) -> int:
    stop = stop_on_signals()
    async with broker:
        started = asyncio.ensure_future(on_start()) if on_start is not None else None
        await asyncio.sleep(0)  # the script is installed before anyone is told the address
        print(broker.bootstrap, flush=True)
        if ready_file is not None:
            write_ready_file(ready_file, broker.bootstrap)
        waiters = [asyncio.ensure_future(stop.wait())]
        if done is not None:
            waiters.append(done)  # type: ignore[arg-type]
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        for w in waiters:
            if w is not done:
                w.cancel()
        if started is not None and not started.done():
            started.cancel()
    return done.result() if done is not None and done.done() else EXIT_OK
