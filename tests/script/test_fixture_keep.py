"""``--fakebroker-keep DIR``: the fake broker fixture keeps a failing test's transcript and
pcap, which the project's own commands read back; a passing test keeps nothing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

USERS_TESTS = '''
import asyncio

from fakebroker.client import KafkaConnection
from fakebroker.protocol import default_registry


def ask(bootstrap):
    async def go():
        async with await KafkaConnection.open(bootstrap) as c:
            await c.send(default_registry()["ApiVersionsRequest"].new(), 3)
    asyncio.run(go())


def test_fails(fake_broker):
    ask(fake_broker.bootstrap)
    assert False, "the user's own assertion"


def test_passes(fake_broker):
    ask(fake_broker.bootstrap)
'''


def fakebroker(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fakebroker.cli", *args], capture_output=True, text=True,
                          timeout=60)


def test_a_failing_tests_broker_evidence_is_kept_and_reads_back(tmp_path: Path) -> None:
    (tmp_path / "test_users.py").write_text(USERS_TESTS)
    keep = tmp_path / "evidence"
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-o", "addopts=", "-q",
                        "--fakebroker-keep", str(keep), "test_users.py"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert r.returncode == 1, r.stdout[-2000:]
    folders = [p.name for p in keep.iterdir()]
    assert folders == ["test_users.py_test_fails"], folders  # the passing test kept nothing
    transcript = keep / "test_users.py_test_fails" / "broker-1.jsonl"
    assert str(transcript) in r.stdout  # the run says where
    lines = [json.loads(line) for line in transcript.read_text().splitlines()]
    assert lines[0]["kind"] == "header" and [x["api"] for x in lines[1:3]] == ["ApiVersions", "ApiVersions"]
    # The project's own commands read it: pcap, and decode of a recorded frame.
    out = tmp_path / "again.pcap"
    assert fakebroker("pcap", str(transcript), "-o", str(out)).returncode == 0 and out.stat().st_size > 0
    assert (keep / "test_users.py_test_fails" / "broker-1.pcap").read_bytes() == out.read_bytes()
    decoded = fakebroker("decode", lines[1]["raw"])
    assert decoded.returncode == 0 and json.loads(decoded.stdout)["api"] == "ApiVersions", decoded


def test_without_the_option_nothing_is_recorded(tmp_path: Path) -> None:
    (tmp_path / "test_users.py").write_text(USERS_TESTS)
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-o", "addopts=", "-q",
                        "test_users.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "fakebroker-keep" not in r.stdout
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "__pycache__") == ["test_users.py"]


@pytest.mark.tshark
def test_the_kept_pcap_dissects_as_kafka(tmp_path: Path) -> None:
    tshark = shutil.which("tshark")
    if tshark is None:
        pytest.fail("tshark not found: run .ci/setup.sh (Debian package tshark)")
    (tmp_path / "test_users.py").write_text(USERS_TESTS)
    keep = tmp_path / "evidence"
    subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-o", "addopts=", "-q",
                    "--fakebroker-keep", str(keep), "test_users.py", "-k", "fails"], cwd=tmp_path,
                   capture_output=True, text=True, timeout=120)
    pcap = keep / "test_users.py_test_fails" / "broker-1.pcap"
    r = subprocess.run([tshark, "-r", str(pcap), "-Y", "kafka", "-T", "fields", "-e", "kafka.api_key"],
                       capture_output=True, text=True, timeout=60)
    assert r.stdout.split() == ["18", "18"], r.stdout + r.stderr
