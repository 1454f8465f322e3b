"""``serve_until_signalled``, the foreground loop of ``python -m fakebroker.realkafka start``
and ``python -m fakebroker.realconnect start``: it ends with the process it serves."""

from __future__ import annotations

import os
import signal
import threading
from dataclasses import dataclass

from fakebroker.realkafka.cli import serve_until_signalled


@dataclass
class Served:
    """A served process that exits by itself after ``polls_alive`` polls (never if None)."""

    polls_alive: int | None
    stopped: int = 0
    polls: int = 0

    def stop(self) -> None:
        self.stopped += 1

    def exit_code(self) -> int | None:
        self.polls += 1
        return 1 if self.polls_alive is not None and self.polls > self.polls_alive else None


def test_a_process_that_exits_by_itself_ends_the_command_with_status_1(capsys) -> None:
    served = Served(polls_alive=2)
    assert serve_until_signalled(served, "http://127.0.0.1:1", served.exit_code) == 1
    assert served.stopped == 1 and served.polls == 3
    out = capsys.readouterr()
    assert out.out == "http://127.0.0.1:1\n"
    assert "exited by itself (status 1)" in out.err


def test_a_signal_ends_the_command_with_status_0() -> None:
    served = Served(polls_alive=None)
    threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGTERM)).start()
    previous = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    try:
        assert serve_until_signalled(served, "127.0.0.1:9092", served.exit_code) == 0
    finally:
        signal.signal(signal.SIGTERM, previous[0])
        signal.signal(signal.SIGINT, previous[1])
    assert served.stopped == 1 and served.polls >= 1
