"""`fakebroker replay` streams: a line for each transcript as soon as it is replayed, not
all of them at the end (a run of the 155 goldens on real time takes minutes)."""

from __future__ import annotations

import subprocess
import sys
import tempfile

from .helpers import GOLDEN_DIR as GOLDEN
from .test_replay import serve

CMD = [sys.executable, "-m", "fakebroker.cli"]


def test_each_result_is_printed_when_its_transcript_is_done() -> None:
    quick = GOLDEN / "CLS-JOIN-06.jsonl"
    timed = GOLDEN / "CLS-SESS-03.jsonl"  # waits the recorded 6.5 s for a member id to expire
    with serve("--initial-rebalance-delay-ms", "0") as addr:
        # stderr to a file: communicate() after readline() would read the pipe past what the
        # text wrapper already buffered (the summary line could be lost), and reading stdout
        # to its end while stderr is a pipe could block on a full stderr pipe.
        errf = tempfile.TemporaryFile("w+")
        proc = subprocess.Popen([*CMD, "replay", str(quick), str(timed), "--against", addr],
                                stdout=subprocess.PIPE, stderr=errf, text=True)
        try:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == f"replaying 2 transcript(s) against {addr}, one at a time"
            first = proc.stdout.readline()
            # The first result is out while the second transcript still waits its 6.5 s (the
            # margin: this reader would have to lag 6.5 s behind the print to miss it).
            assert first.startswith("[1/2] PASS CLS-JOIN-06 "), first
            assert proc.poll() is None
            second = proc.stdout.readline()
            assert second.startswith("[2/2] PASS CLS-SESS-03 "), second
            rest = proc.stdout.read()  # to the end, including what readline() buffered
            proc.wait(timeout=120)
            errf.seek(0)
            err = errf.read()
        finally:
            if proc.poll() is None:
                proc.kill()
            errf.close()
    assert proc.returncode == 0, err
    assert rest.strip() == "2 passed, 0 failed, 0 skipped"


def test_a_failure_recorded_on_other_settings_prints_the_serve_flags_to_paste() -> None:
    # A coordinator that allows 1 s sessions accepts what the transcript expects refused.
    with serve("--min-session-timeout-ms", "1000") as addr:
        r = subprocess.run([*CMD, "replay", str(GOLDEN / "CLS-JOIN-03.jsonl"), "--against", addr],
                           capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr
    flags = "--initial-rebalance-delay-ms 0 --strict-topics --topic events:3"  # the broker goldens are recorded on
    assert f"  to serve it as recorded: fakebroker serve {flags}\n" in r.stdout
    from fakebroker.cli import build_parser
    build_parser().parse_args(["serve", *flags.split()])  # the line is one serve accepts
