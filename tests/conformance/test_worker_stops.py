"""How the worker suite stops a finished case's workers: waited for, or, for a target with
``overlap_stops``, while the next case runs, every stop still over before the session ends."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from conformance.catalogue.requirements import default_catalogue
from conformance.harness.worker import WorkerSession
from conformance.harness.target import TargetError, load_target
from fakebroker.script.recorder import Recorder

# A "worker" that takes 1.5 s to exit after SIGTERM, as a JVM's shutdown takes a while.
SLOW_STOP = ("{python} -c 'import signal, sys, time; "
             "signal.signal(signal.SIGTERM, lambda *_: (time.sleep(1.5), sys.exit(0))); time.sleep(60)' "
             "{bootstrap} {group}")
STOP_S = 1.5


def worker_target(tmp_path: Path, overlap: bool | None) -> Path:
    option = "" if overlap is None else f"overlap_stops = {str(overlap).lower()}\n"
    path = tmp_path / "slow-stop.toml"
    path.write_text(f'name = "slow-stop"\nkind = "worker"\nprotocols = ["classic"]\n'
                    f'[start]\ncommand = "{SLOW_STOP}"\n{option}'
                    f'[timing]\nclock = "real"\n')
    return path


async def one_case(session: WorkerSession) -> tuple[float, list]:
    """A case that starts two workers and ends: how long its close took, and its workers."""
    ctx = session.context(default_catalogue()["CLS-W-01"], Recorder())
    workers = [await ctx.start_worker(), await ctx.start_worker()]
    await asyncio.sleep(0.5)  # each installs its SIGTERM handler
    t0 = time.monotonic()
    await ctx.close()
    return time.monotonic() - t0, workers


@pytest.mark.parametrize("overlap", [None, False])
def test_a_case_waits_for_its_workers_to_stop_by_default(tmp_path: Path, overlap: bool | None) -> None:
    session = WorkerSession.start(load_target(worker_target(tmp_path, overlap)))
    try:
        took, workers = asyncio.run(one_case(session))
    finally:
        session.stop()
    assert took >= STOP_S  # both at once, each waited for
    assert all(w.proc.returncode == 0 for w in workers)
    assert not any(Path(w.log_path).exists() for w in workers)


def test_with_overlap_stops_a_case_ends_before_its_workers_and_the_session_waits_for_them(tmp_path: Path) -> None:
    session = WorkerSession.start(load_target(worker_target(tmp_path, True)))
    try:
        took, workers = asyncio.run(one_case(session))
        assert took < STOP_S / 2, took
        assert all(w.alive() for w in workers)  # still stopping while the next case could start
        assert all(Path(w.log_path).exists() for w in workers)  # its log removed once it stopped
    finally:
        session.stop()
    assert all(w.proc.returncode == 0 for w in workers)  # stopped by SIGTERM, not killed
    assert not any(Path(w.log_path).exists() for w in workers)


def test_overlap_stops_needs_a_command(tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    path.write_text('name = "t"\nkind = "coordinator"\nprotocols = ["classic"]\n'
                    '[start]\nbootstrap = "h:1"\noverlap_stops = true\n[timing]\nclock = "real"\n')
    with pytest.raises(TargetError, match="overlap-stops-needs-command"):
        load_target(path)


def test_the_bundled_connect_targets_overlap_stops_with_a_status_topic_per_group() -> None:
    root = Path(__file__).resolve().parents[2] / "fixtures" / "targets"
    for protocol in ("eager", "compatible", "sessioned"):
        target = load_target(root / f"apache-connect-{protocol}.toml")
        assert target.overlap_stops
        command = target.render_command(topic_prefix="p", group="g1", bootstrap="h:1")
        assert "--status-topic p-g1-status" in command
