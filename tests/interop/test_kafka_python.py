"""Byte-identical interop with kafka-python 3.0.12's protocol classes.

Every standard API of schemas/messages, requests and responses, at every version both
sides have (the lowest, the first flexible and the highest under three drawing
profiles, the versions between under the RANDOM profile), in both directions:

* theirs->ours: drawn in kafka-python's model from kafka-python's own schema, encoded
  by kafka-python, decoded and re-encoded by ours: identical bytes, equal values;
* ours->theirs: drawn from our spec, encoded by ours, decoded and re-encoded by
  kafka-python: identical bytes, equal values.

Skipped (each shows up as a pytest skip with this reason):

* ConsumerGroupHeartbeat (key 68) and ConsumerGroupDescribe (key 69), requests and
  responses, all versions: kafka-python 3.0.12 ships no spec and no class for them.
* No version is missing otherwise: kafka-python's JSON specs have the same valid and
  flexible versions as ours for the other 15 APIs (it accepts versions below Kafka's
  lowest too, which we do not test).

Disagreements with Kafka 4.2.0 found (kafka-python's bugs; each pinned below by an
``xfail(strict=True)`` test, and kept out of the generic cases by a narrowing that
names it):

* ``unknown-tags-dropped``: unknown tagged fields are decoded but never re-encoded.
* ``tagged-default-compared-to-python-default``: a tagged struct equal to its Kafka
  default (or a tagged uuid equal to zero) is written, because kafka-python compares
  with ``None``, its Python default.
* ``api-versions-error-decodes-as-v0``: ApiVersionsResponse with a non-zero ErrorCode
  is always decoded as v0 (a v3 response with INVALID_REQUEST fails to decode).
* ``decoded-message-encode-version``: a decoded message raises AttributeError on
  ``encode(version=v)`` (the adapter calls ``encode()``, which uses the decoded version).

Representation differences (not wire disagreements) bridged by the adapter: the zero
UUID is ``None``; authorized-operations fields are sets of bit numbers.
"""

from __future__ import annotations

import struct
import uuid

import pytest

from tests.interop.harness import REGISTRY, Matrix, check_converter, run_case
from tests.interop.kafka_python_adapter import KNOWN, KafkaPythonAdapter

ADAPTER = KafkaPythonAdapter()
MATRIX = Matrix(ADAPTER)
PARAMS = MATRIX.params()


@pytest.mark.parametrize(("name", "version", "direction", "profile", "examples"), PARAMS)
def test_kafka_python_interop(name, version, direction, profile, examples) -> None:
    run_case(ADAPTER, name, version, direction, profile, examples)


def test_skips_are_the_documented_ones() -> None:
    """Only the two APIs kafka-python lacks are skipped, at every version."""
    skipped_messages = {k.split(" ")[0] for k in MATRIX.skipped}
    assert skipped_messages == {"ConsumerGroupHeartbeatRequest", "ConsumerGroupHeartbeatResponse",
                                "ConsumerGroupDescribeRequest", "ConsumerGroupDescribeResponse"}


def test_converter_is_lossless_on_a_dense_message() -> None:
    mt = REGISTRY["MetadataResponse"]
    topic = mt.cls.MetadataResponseTopic(name="t\U0001f600", topic_id=uuid.uuid4(), is_internal=True,
                                         topic_authorized_operations=0b1011)
    obj = mt.new(throttle_time_ms=5, topics=[topic], cluster_authorized_operations=-(2**31))
    check_converter(ADAPTER, mt, 10, obj)


# ---------------------------------------------------------------- kafka-python's bugs, pinned

def _why(known_id: str) -> str:
    k = KNOWN[known_id]
    return f"kafka-python bug [{k.id}]: {k.what}; Kafka: {k.kafka}"


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=_why("unknown-tags-dropped"))
def test_unknown_tagged_fields_survive_kafka_python() -> None:
    mt = REGISTRY["HeartbeatRequest"]
    ours = mt.new(group_id="g", generation_id=1, member_id="m", _unknown_tags={7: b"\x01\x02"})
    data = mt.encode(ours, 4)
    theirs = ADAPTER.decode(data, mt, 4)
    assert theirs.unknown_tags == {"_7": b"\x01\x02"}  # decoded fine ...
    assert ADAPTER.encode(theirs, mt, 4) == data  # ... but not written back


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=_why("tagged-default-compared-to-python-default"))
def test_tagged_struct_at_kafka_default_is_not_written_by_kafka_python() -> None:
    mt = REGISTRY["ProduceResponse"]
    cls = ADAPTER.their_class(mt, 10)
    part_cls = cls.TopicProduceResponse.PartitionProduceResponse
    part = part_cls(version=10, index=0, error_code=0, base_offset=1, log_append_time_ms=-1,
                    log_start_offset=-1, record_errors=[], error_message=None,
                    current_leader=part_cls.LeaderIdAndEpoch(version=10, leader_id=-1, leader_epoch=-1))
    theirs = cls(version=10, responses=[cls.TopicProduceResponse(version=10, name="t", partition_responses=[part])],
                 throttle_time_ms=0)
    data = ADAPTER.encode(theirs, mt, 10)
    assert mt.encode(mt.decode(data, 10), 10) == data


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=_why("tagged-default-compared-to-python-default"))
def test_tagged_zero_uuid_is_not_written_by_kafka_python() -> None:
    mt = REGISTRY["FetchRequest"]
    cls = ADAPTER.their_class(mt, 17)
    part = cls.FetchTopic.FetchPartition(version=17, partition=0, current_leader_epoch=-1, fetch_offset=0,
                                         last_fetched_epoch=-1, log_start_offset=-1, partition_max_bytes=1,
                                         replica_directory_id=uuid.UUID(int=0))
    theirs = cls(version=17, max_wait_ms=1, min_bytes=1, max_bytes=1, isolation_level=0, session_id=0,
                 session_epoch=-1, topics=[cls.FetchTopic(version=17, topic_id=uuid.uuid4(), partitions=[part])],
                 forgotten_topics_data=[], rack_id="")
    data = ADAPTER.encode(theirs, mt, 17)
    assert mt.encode(mt.decode(data, 17), 17) == data


@pytest.mark.xfail(strict=True, raises=(AssertionError, struct.error),
                   reason=_why("api-versions-error-decodes-as-v0"))
def test_api_versions_response_with_error_at_v3_decodes_in_kafka_python() -> None:
    mt = REGISTRY["ApiVersionsResponse"]
    ours = mt.new(error_code=42, api_keys=[mt.cls.ApiVersion(api_key=18, min_version=0, max_version=4)],
                  throttle_time_ms=7)
    data = mt.encode(ours, 3)
    theirs = ADAPTER.decode(data, mt, 3)
    assert ADAPTER.encode(theirs, mt, 3) == data


@pytest.mark.xfail(strict=True, raises=AttributeError, reason=_why("decoded-message-encode-version"))
def test_kafka_python_reencodes_a_decoded_message_at_an_explicit_version() -> None:
    mt = REGISTRY["HeartbeatRequest"]
    data = mt.encode(mt.new(group_id="g", generation_id=1, member_id="m"), 4)
    theirs = ADAPTER.decode(data, mt, 4)
    assert bytes(theirs.encode(version=4)) == data
