"""Real traffic, two records of it: kafka-python joins a group on `fakebroker serve
--record` while tshark captures loopback. The broker's transcript and the capture ingest
to the same exchanges, and the audit finds nothing in either."""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.realclients.harness import Member, partitions_split, wait_until

from .conftest import free_port, recording_broker
from .test_ingest import KEY

pytestmark = pytest.mark.tshark
TOPIC = "events"


def _start_capture(port: int, out: Path) -> subprocess.Popen:
    """tshark on lo, filtered to the broker's port; returns once it says it is capturing."""
    p = subprocess.Popen(["tshark", "-i", "lo", "-f", f"tcp port {port}", "-w", str(out)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen = []
    for line in p.stderr:  # type: ignore[union-attr]
        seen.append(line)
        if "Capturing on" in line:
            return p
    p.wait()
    pytest.fail(f"tshark could not capture on lo (privileges?): {''.join(seen)[-400:]}")


def _drain(pcap: Path, quiet_s: float = 1.0, bound_s: float = 15.0) -> None:
    """Stop the capture only once dumpcap has written what the kernel handed it: the file has
    not grown for ``quiet_s`` (bounded). Stopping at once lost the last exchanges under load."""
    last, still_since, start = -1, time.monotonic(), time.monotonic()
    while time.monotonic() - start < bound_s:
        size = pcap.stat().st_size if pcap.exists() else 0
        if size != last:
            last, still_since = size, time.monotonic()
        elif time.monotonic() - still_since >= quiet_s:
            return
        time.sleep(0.1)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    if shutil.which("tshark") is None:
        pytest.skip("tshark is not installed (Debian package tshark; .ci/setup.sh installs it)")
    d = tmp_path_factory.mktemp("real")
    port = free_port()
    cap = _start_capture(port, d / "lo.pcap")
    try:
        with recording_broker(port, d / "rec", TOPIC) as bootstrap:
            members = [Member("kafka-python", bootstrap, "pipeline-real", TOPIC, f"m{i}") for i in range(2)]
            try:
                wait_until(members, partitions_split(TOPIC, 4), "2 kafka-python members to share 4 partitions",
                           timeout=60)
            finally:
                for m in members:
                    m.close()
    finally:
        _drain(d / "lo.pcap")
        cap.send_signal(signal.SIGINT)
        cap.wait(30)
    transcripts = sorted((d / "rec").rglob("*.jsonl"))
    assert transcripts, "the broker recorded no transcript"
    return d, transcripts


def test_capture_and_record_ingest_to_the_same_exchanges(spark, recorded):
    from conformance.pipeline.audit import audit
    from conformance.pipeline.ingest import ingest
    from conformance.pipeline.inputs import resolve
    from conformance.pipeline.tables import EXCHANGE
    from conformance.pipeline.warehouse import Warehouse
    d, transcripts = recorded
    wh = Warehouse(spark, d / "wh")
    s = ingest(wh, resolve([str(d / "lo.pcap"), *map(str, transcripts)]))
    assert s.rejects == 0, s.reject_samples
    ex = wh.read("exchanges", EXCHANGE).cache()

    def rows(kind: str, answered: bool):  # connections: numbered by the broker, by port in the capture
        where = f"source_kind = '{kind}' and resp_ref is {'not ' if answered else ''}null"
        return sorted((tuple(tuple(r[k]) if isinstance(r[k], list) else r[k] for k in KEY)
                       for r in ex.where(where).collect()), key=repr)
    record = rows("transcript", True)
    # A heartbeat is not certain: the members may leave before their first interval ends.
    assert len(record) > 10 and {r[0] for r in record} >= {"JoinGroup", "SyncGroup"}
    assert rows("pcap", True) == record
    # Requests still on the wire when the broker stopped (e.g. a SyncGroup parked until the
    # leader's, or bytes it never read) are in the capture, unanswered; the record has any
    # it read, unanswered too.
    pending = rows("pcap", False)
    assert all(x in pending for x in rows("transcript", False))
    assert audit(ex).count() == 0

