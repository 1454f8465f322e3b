"""librdkafka's mock cluster (confluent-kafka), a broker nobody here wrote, through its
launcher: it starts, says where it listens, is negotiated with (it refuses ApiVersions v3
with an answer v3 cannot decode, so the suite asks again at v0) and stops on SIGTERM."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fakebroker.negotiation import probe
from fakebroker.protocol import default_registry

pytest.importorskip("confluent_kafka")
ROOT = Path(__file__).resolve().parents[2]


def test_the_launcher_starts_the_mock_and_the_suite_negotiates_with_it(tmp_path: Path) -> None:
    port_file = tmp_path / "mock.port"
    p = subprocess.Popen([sys.executable, "-m", "fakebroker.thirdparty.librdkafka_mock",
                          "--port-file", str(port_file)], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None
        line = p.stdout.readline().strip()  # READY host:port, once listening
        assert line.startswith("READY 127.0.0.1:"), line
        bootstrap = line.split()[1]
        assert port_file.read_text().strip() == bootstrap
        ranges = asyncio.run(probe(bootstrap, default_registry()))
        assert ranges.via == 0  # v3 refused, v0 answered
        assert ranges.advertised["JoinGroup"] == (0, 6)
        assert ranges.pick("JoinGroup", 0, 9) == 6
        assert ranges.capped({"JoinGroup": 5}).pick("JoinGroup", 0, 9) == 5
        assert "DescribeGroups" not in ranges.usable
    finally:
        p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        while p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if p.poll() is None:
            p.kill()
        p.communicate()
    assert p.returncode == 0
