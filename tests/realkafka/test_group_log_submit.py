"""``KafkaGroupLog.submit``: state changes handed over without waiting are written in
the order submitted, at consecutive offsets, each future giving its own change's offsets
(those queued while a Produce is out go together, as one batch, in the next)."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from fakebroker.realkafka import RealKafka
from fakebroker.realkafka.group_log import KafkaGroupLog, read_log
from fakebroker.realkafka.records import Record

pytestmark = pytest.mark.realkafka


def test_submitted_changes_land_in_order_at_consecutive_offsets(real_kafka: RealKafka) -> None:
    topic = f"group-log-submit-{uuid.uuid4().hex[:12]}"
    changes = [[(f"k{i}-{j}".encode(), f"v{i}-{j}".encode()) for j in range(1 + i % 3)]
               for i in range(60)]
    with KafkaGroupLog(real_kafka.bootstrap, topic) as log:
        futures = [log.submit_bytes(change) for change in changes]  # none waited for
        written = [f.result(30) for f in futures]
        assert [w.count for w in written] == [len(c) for c in changes]
        assert [w.base_offset for w in written] == [0] + [w.end for w in written[:-1]]
        assert log.batches == written
    log_records: list[Record] = asyncio.run(read_log(real_kafka.bootstrap, topic))
    assert [(r.key, r.value) for r in log_records] == [e for change in changes for e in change]
