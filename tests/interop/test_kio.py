"""Byte-identical interop with kio 0.6.5's entities.

Every standard API of schemas/messages (all 17: kio has ConsumerGroupHeartbeat,
ConsumerGroupDescribe, DescribeCluster and Produce too), requests and responses, at
every valid version (the lowest, the first flexible and the highest under three
drawing profiles, the versions between under the RANDOM profile), in both directions:

* theirs->ours: drawn in kio's model from kio's own dataclasses, written by
  ``entity_writer``, decoded and re-encoded by ours: identical bytes, equal values;
* ours->theirs: drawn from our spec, encoded by ours, read and re-written by kio:
  identical bytes, equal values.

Skipped: nothing. kio 0.6.5 has a module for every valid version of the 34 messages
(``kio/schema/<api>/v<N>/request.py`` / ``response.py``); should one go missing, its
cases show up as pytest skips naming the module.

Disagreements with Kafka 4.2.0 found (kio's bugs; each pinned below by an
``xfail(strict=True)`` test, and kept out of the generic ours->theirs cases by a value
narrowing that names it in kio_adapter.py):

* ``unknown-tags-rejected``: an unknown tagged field makes the reader raise KeyError.
* ``tagged-zero-uuid-written``: a tagged uuid set to the zero UUID is written (kio
  compares with ``None``, its Python default).
* ``unknown-error-code-rejected``: an error code outside kio's ErrorCode enum makes the
  reader raise ValueError.
* ``datetime-range``: LogAppendTimeMs below -1 or past year 9999 cannot be read.
* ``datetime-read-imprecise``: far-future LogAppendTimeMs values are read a fraction
  of a millisecond early (float seconds); the writer rounds, so bytes still match and
  the adapter rounds the same way when it compares values.
* ``timedelta-i64-range``: RetentionTimeMs beyond +-999999999 days cannot be read, and
  large values are written back with the milliseconds rounded (float arithmetic).

Representation differences (not wire disagreements) bridged by the adapter: error codes
are ``ErrorCode`` members; ``*Ms`` durations are timedeltas and lose the ``_ms`` suffix;
LogAppendTimeMs is an aware datetime with -1 as ``None``; the zero UUID is ``None``.
"""

from __future__ import annotations

import datetime
import uuid

import pytest
from kio.serial.errors import OutOfBoundValue

from tests.interop.harness import REGISTRY, Matrix, check_converter, run_case
from tests.interop.kio_adapter import KNOWN, TIMEDELTA_EXACT_MS, KioAdapter

ADAPTER = KioAdapter()
MATRIX = Matrix(ADAPTER)
PARAMS = MATRIX.params()


@pytest.mark.parametrize(("name", "version", "direction", "profile", "examples"), PARAMS)
def test_kio_interop(name, version, direction, profile, examples) -> None:
    run_case(ADAPTER, name, version, direction, profile, examples)


def test_nothing_is_skipped() -> None:
    assert MATRIX.skipped == {}


def test_converter_is_lossless_on_a_dense_message() -> None:
    mt = REGISTRY["ProduceResponse"]
    p = mt.cls.PartitionProduceResponse(index=3, error_code=6, base_offset=9, log_append_time_ms=1234,
                                        log_start_offset=-1, error_message="é",
                                        current_leader=mt.cls.LeaderIdAndEpoch(leader_id=1, leader_epoch=2))
    obj = mt.new(responses=[mt.cls.TopicProduceResponse(name="t", partition_responses=[p])], throttle_time_ms=7)
    check_converter(ADAPTER, mt, 11, obj)


# ---------------------------------------------------------------- kio's bugs, pinned

def _why(known_id: str) -> str:
    k = KNOWN[known_id]
    return f"kio bug [{k.id}]: {k.what}; Kafka: {k.kafka}"


@pytest.mark.xfail(strict=True, raises=KeyError, reason=_why("unknown-tags-rejected"))
def test_kio_skips_unknown_tagged_fields() -> None:
    mt = REGISTRY["HeartbeatRequest"]
    data = mt.encode(mt.new(group_id="g", generation_id=1, member_id="m", _unknown_tags={7: b"\x01"}), 4)
    ADAPTER.decode(data, mt, 4)


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=_why("tagged-zero-uuid-written"))
def test_kio_leaves_a_zero_tagged_uuid_unwritten() -> None:
    from kio.schema.fetch.v17.request import FetchPartition, FetchRequest, FetchTopic

    part = FetchPartition(partition=0, current_leader_epoch=-1, fetch_offset=0, partition_max_bytes=1,
                          replica_directory_id=uuid.UUID(int=0))
    theirs = FetchRequest(max_wait=datetime.timedelta(milliseconds=1), min_bytes=1, max_bytes=1,
                          isolation_level=0, session_id=0, session_epoch=-1, forgotten_topics_data=(),
                          rack_id="", topics=(FetchTopic(topic_id=uuid.uuid4(), partitions=(part,)),))
    mt = REGISTRY["FetchRequest"]
    data = ADAPTER.encode(theirs, mt, 17)
    assert mt.encode(mt.decode(data, 17), 17) == data


@pytest.mark.xfail(strict=True, raises=ValueError, reason=_why("unknown-error-code-rejected"))
def test_kio_reads_an_error_code_it_does_not_know() -> None:
    mt = REGISTRY["HeartbeatResponse"]
    unknown = 32000
    data = mt.encode(mt.new(throttle_time_ms=0, error_code=unknown), 4)
    ADAPTER.decode(data, mt, 4)


@pytest.mark.xfail(strict=True, raises=(OutOfBoundValue, ValueError), reason=_why("datetime-range"))
@pytest.mark.parametrize("log_append_time_ms", [-2, 2**62], ids=["below--1", "past-year-9999"])
def test_kio_reads_any_log_append_time(log_append_time_ms: int) -> None:
    mt = REGISTRY["ProduceResponse"]
    p = mt.cls.PartitionProduceResponse(index=0, log_append_time_ms=log_append_time_ms)
    data = mt.encode(mt.new(responses=[mt.cls.TopicProduceResponse(name="t", partition_responses=[p])]), 9)
    ADAPTER.decode(data, mt, 9)


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=_why("datetime-read-imprecise"))
def test_kio_reads_the_last_millisecond_of_9999_exactly() -> None:
    mt = REGISTRY["ProduceResponse"]
    ms = 253402300799999  # 9999-12-31T23:59:59.999Z
    p = mt.cls.PartitionProduceResponse(index=0, log_append_time_ms=ms)
    data = mt.encode(mt.new(responses=[mt.cls.TopicProduceResponse(name="t", partition_responses=[p])]), 9)
    theirs = ADAPTER.decode(data, mt, 9)
    read = theirs.responses[0].partition_responses[0].log_append_time
    assert read == datetime.datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=datetime.UTC)


@pytest.mark.xfail(strict=True, raises=(ValueError, OverflowError), reason=_why("timedelta-i64-range"))
def test_kio_reads_a_large_retention_time() -> None:
    mt = REGISTRY["OffsetCommitRequest"]
    data = mt.encode(mt.new(group_id="g", retention_time_ms=2**62), 2)
    ADAPTER.decode(data, mt, 2)


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=_why("timedelta-i64-range"))
def test_kio_writes_a_large_retention_time_exactly() -> None:
    mt = REGISTRY["OffsetCommitRequest"]
    cls = ADAPTER.their_class(mt, 2)
    ms = TIMEDELTA_EXACT_MS * 1000 + 1  # representable as a timedelta, past float precision
    theirs = cls(group_id="g", generation_id_or_member_epoch=-1, member_id="",
                 retention_time=datetime.timedelta(milliseconds=ms), topics=())
    data = ADAPTER.encode(theirs, mt, 2)
    assert mt.decode(data, 2).retention_time_ms == ms


def test_kio_writes_our_converted_object_as_we_do() -> None:
    """A smoke check of the adapter's plumbing: ours -> kio object -> kio writer."""
    mt = REGISTRY["JoinGroupRequest"]
    obj = mt.new(group_id="g", session_timeout_ms=10, member_id="", protocol_type="connect",
                 protocols=[mt.cls.JoinGroupRequestProtocol(name="sessioned", metadata=b"\x00\x02")])
    assert ADAPTER.encode(ADAPTER.to_theirs(obj, mt, 9), mt, 9) == mt.encode(obj, 9)
