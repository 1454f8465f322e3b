"""Strict decoding: hand-built byte strings that each break exactly one wire rule.

Every negative case asserts the DecodeError's ``rule``, ``path`` and ``offset`` exactly: a
conformance tool that only says "bad frame" cannot tell an implementer what to fix.
Offsets are absolute within the bytes handed to the decoder (the frame without its size
prefix, for ``decode_request``).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from fakebroker.protocol import DecodeError, EncodeError, Struct, default_registry
from fakebroker.protocol.framing import (
    decode_request, decode_response, encode_request, encode_response,
)

REG = default_registry()
JG = REG["JoinGroupRequest"]


def decode_error(decode: Callable[[], object]) -> DecodeError:
    with pytest.raises(DecodeError) as info:
        decode()
    return info.value


def check(data: bytes, name: str, version: int, rule: str, path: str, offset: int) -> DecodeError:
    e = decode_error(lambda: REG[name].decode(data, version))
    assert (e.rule, e.path, e.offset) == (rule, path, offset), str(e)
    return e


# ------------------------------------------------------------ building blocks
# JoinGroupRequest v0 (non-flexible): GroupId string, SessionTimeoutMs int32, MemberId string,
# ProtocolType string, Protocols [](Name string, Metadata bytes).
JG0_HEAD = (
    b"\x00\x01g"             # 0-2   GroupId: int16 length 1, "g"
    b"\x00\x00\x75\x30"      # 3-6   SessionTimeoutMs: 30000
    b"\x00\x00"              # 7-8   MemberId: ""
    b"\x00\x08consumer"      # 9-18  ProtocolType: "consumer"
)                            # 19-   Protocols
PROTO_A = b"\x00\x01a" + b"\x00\x00\x00\x01\x01"  # Name "a", Metadata: int32 length 1, 0x01

# JoinGroupRequest v6 (flexible): compact strings and arrays, tagged-field sections.
JG6_HEAD = (
    b"\x02g"                 # 0-1   GroupId: compact length 1+1, "g"
    b"\x00\x00\x75\x30"      # 2-5   SessionTimeoutMs
    b"\xff\xff\xff\xff"      # 6-9   RebalanceTimeoutMs: -1
    b"\x01"                  # 10    MemberId: ""
    b"\x00"                  # 11    GroupInstanceId: null (compact 0)
    b"\x09consumer"          # 12-20 ProtocolType: "consumer"
)                            # 21-   Protocols
JG6_NO_PROTOCOLS = JG6_HEAD + b"\x01"  # 21 Protocols: compact count 0+1 = empty


# ------------------------------------------------------------ lengths
def test_negative_string_length() -> None:
    check(b"\xff\xfe" + JG0_HEAD[3:],  # GroupId length -2
          "JoinGroupRequest", 0, "negative-length", "JoinGroupRequest.GroupId", 0)


def test_negative_array_count() -> None:
    data = JG0_HEAD + b"\xff\xff\xff\xfb"  # 19-22 Protocols: count -5
    check(data, "JoinGroupRequest", 0, "negative-length", "JoinGroupRequest.Protocols", 19)


def test_negative_bytes_length() -> None:
    data = JG0_HEAD + (
        b"\x00\x00\x00\x01"   # 19-22 Protocols: count 1
        b"\x00\x01a"          # 23-25 [0].Name "a"
        b"\xff\xff\xff\xfe"   # 26-29 [0].Metadata: length -2
    )
    check(data, "JoinGroupRequest", 0, "negative-length", "JoinGroupRequest.Protocols[0].Metadata", 26)


def test_null_in_non_nullable_string() -> None:
    check(b"\xff\xff" + JG0_HEAD[3:],  # GroupId length -1 (null)
          "JoinGroupRequest", 0, "null-not-nullable", "JoinGroupRequest.GroupId", 0)


def test_null_in_non_nullable_array() -> None:
    data = JG0_HEAD + b"\xff\xff\xff\xff"  # 19-22 Protocols: count -1 (null)
    check(data, "JoinGroupRequest", 0, "null-not-nullable", "JoinGroupRequest.Protocols", 19)


def test_null_in_non_nullable_bytes() -> None:
    data = JG0_HEAD + b"\x00\x00\x00\x01" + b"\x00\x01a" + b"\xff\xff\xff\xff"  # Metadata -1 at 26
    check(data, "JoinGroupRequest", 0, "null-not-nullable", "JoinGroupRequest.Protocols[0].Metadata", 26)


def test_compact_null_in_non_nullable_string() -> None:
    check(b"\x00" + JG6_NO_PROTOCOLS[2:] + b"\x00",  # GroupId: compact 0 (null)
          "JoinGroupRequest", 6, "null-not-nullable", "JoinGroupRequest.GroupId", 0)


def test_compact_null_in_non_nullable_array() -> None:
    data = JG6_HEAD + b"\x00" + b"\x00" + b"\x00"  # 21 Protocols: compact 0 (null); Reason absent in v6
    check(data, "JoinGroupRequest", 6, "null-not-nullable", "JoinGroupRequest.Protocols", 21)


def test_compact_null_in_non_nullable_bytes() -> None:
    data = JG6_HEAD + (
        b"\x02"               # 21    Protocols: 1 element
        b"\x02a"              # 22-23 [0].Name "a"
        b"\x00"               # 24    [0].Metadata: compact 0 (null)
        b"\x00"               # 25    [0] tagged fields: none
        b"\x00"               # 26    tagged fields: none
    )
    check(data, "JoinGroupRequest", 6, "null-not-nullable", "JoinGroupRequest.Protocols[0].Metadata", 24)


def test_string_length_past_end() -> None:
    data = b"\x00\x05ab"  # GroupId: length 5 but only 2 bytes follow
    check(data, "JoinGroupRequest", 0, "length-past-end", "JoinGroupRequest.GroupId", 2)


def test_bytes_length_past_end() -> None:
    data = JG0_HEAD + (
        b"\x00\x00\x00\x01"   # 19-22 Protocols: count 1
        b"\x00\x01a"          # 23-25 [0].Name
        b"\x00\x00\x01\x00"   # 26-29 [0].Metadata: length 256
        b"\x01\x02"           # 30-31 only 2 bytes of it
    )
    check(data, "JoinGroupRequest", 0, "length-past-end", "JoinGroupRequest.Protocols[0].Metadata", 30)


def test_array_count_past_end() -> None:
    data = JG0_HEAD + b"\x00\x00\x00\x09" + PROTO_A  # count 9, one element present
    check(data, "JoinGroupRequest", 0, "length-past-end", "JoinGroupRequest.Protocols", 23)


def test_array_count_past_end_fails_before_reading_elements() -> None:
    # A count of 2^31-1 must be refused up front, not by trying to read that many elements.
    data = JG0_HEAD + b"\x7f\xff\xff\xff"
    check(data, "JoinGroupRequest", 0, "length-past-end", "JoinGroupRequest.Protocols", 23)


def test_compact_length_past_end() -> None:
    data = b"\x0aabc"  # GroupId: compact length 9 (0x0a - 1), 3 bytes follow
    check(data, "JoinGroupRequest", 6, "length-past-end", "JoinGroupRequest.GroupId", 1)


def test_compact_array_count_past_end() -> None:
    data = JG6_HEAD + b"\x05" + b"\x02a\x01\x00"  # 21 Protocols: 4 elements; 4 bytes remain
    # The count check is "n > bytes remaining": 4 elements in 4 bytes passes it, then the
    # second element runs out inside its Name.
    e = check(data, "JoinGroupRequest", 6, "truncated", "JoinGroupRequest.Protocols[1].Name", 26)
    assert "1 byte" in e.message
    data = JG6_HEAD + b"\x0a" + b"\x02a\x01\x00"  # 9 elements in 4 bytes: refused up front
    check(data, "JoinGroupRequest", 6, "length-past-end", "JoinGroupRequest.Protocols", 22)


# ------------------------------------------------------------ fixed-width fields
def test_truncated_first_field() -> None:
    check(b"\x00", "JoinGroupRequest", 0, "truncated", "JoinGroupRequest.GroupId", 0)


def test_truncated_run_names_the_field_that_does_not_fit() -> None:
    # v1 reads SessionTimeoutMs and RebalanceTimeoutMs as one 8-byte run.
    data = (
        b"\x00\x00"            # 0-1 GroupId ""
        b"\x00\x00\x75\x30"    # 2-5 SessionTimeoutMs
        b"\x00\x00"            # 6-7 RebalanceTimeoutMs: only 2 of its 4 bytes
    )
    e = check(data, "JoinGroupRequest", 1, "truncated", "JoinGroupRequest.RebalanceTimeoutMs", 6)
    assert "needs 4 byte(s) but only 2 remain" in e.message
    # Cut inside the first field of the run: that one is named.
    check(data[:4], "JoinGroupRequest", 1, "truncated", "JoinGroupRequest.SessionTimeoutMs", 2)


def test_truncated_request_header_names_correlation_id() -> None:
    frame = (
        b"\x00\x0b"            # 0-1 RequestApiKey 11
        b"\x00\x00"            # 2-3 RequestApiVersion 0
        b"\x00\x00"            # 4-5 CorrelationId: 2 of 4 bytes
    )
    e = decode_error(lambda: decode_request(REG, frame))
    assert (e.rule, e.path, e.offset) == ("truncated", "RequestHeader.CorrelationId", 4)


def test_trailing_bytes() -> None:
    data = (
        b"\x00\x01g"           # 0-2  GroupId
        b"\x00\x00\x00\x01"    # 3-6  GenerationId
        b"\x00\x01m"           # 7-9  MemberId
        b"\xde\xad"            # 10-11 left over
    )
    e = check(data, "HeartbeatRequest", 0, "trailing-bytes", "HeartbeatRequest", 10)
    assert "2 byte(s)" in e.message


def test_trailing_bytes_offset_is_absolute_in_a_request_frame() -> None:
    header = b"\x00\x0c\x00\x00\x00\x00\x00\x07\x00\x00"  # Heartbeat v0, correlation 7, ClientId ""
    body = b"\x00\x01g" + b"\x00\x00\x00\x01" + b"\x00\x01m"
    e = decode_error(lambda: decode_request(REG, header + body + b"\x00"))
    assert (e.rule, e.path, e.offset) == ("trailing-bytes", "HeartbeatRequest", 20)
    assert e.header.correlation_id == 7  # type: ignore[attr-defined]


# ------------------------------------------------------------ tagged fields
def test_duplicate_tags() -> None:
    data = JG6_NO_PROTOCOLS + (
        b"\x02"                # 22 two tagged fields
        b"\x05\x00"            # 23-24 tag 5, size 0
        b"\x05\x00"            # 25-26 tag 5 again
    )
    check(data, "JoinGroupRequest", 6, "duplicate-tag", "JoinGroupRequest.<tag 5>", 25)


def test_descending_tags() -> None:
    data = JG6_NO_PROTOCOLS + (
        b"\x02"                # 22 two tagged fields
        b"\x05\x01\xaa"        # 23-25 tag 5, size 1
        b"\x03\x00"            # 26-27 tag 3 after tag 5
    )
    e = check(data, "JoinGroupRequest", 6, "descending-tags", "JoinGroupRequest.<tag 3>", 26)
    assert "follows tag 5" in e.message


def test_tags_in_a_nested_struct_are_checked_and_pathed() -> None:
    data = JG6_HEAD + (
        b"\x03"                # 21    Protocols: 2 elements
        b"\x02a\x01\x00"       # 22-25 [0]: Name "a", Metadata empty, no tags
        b"\x02b\x01"           # 26-28 [1]: Name "b", Metadata empty
        b"\x02"                # 29    [1]: two tagged fields
        b"\x01\x00"            # 30-31 tag 1
        b"\x01\x00"            # 32-33 tag 1 again
        b"\x00"                # 34    top-level tags
    )
    check(data, "JoinGroupRequest", 6, "duplicate-tag", "JoinGroupRequest.Protocols[1].<tag 1>", 32)


def test_tag_size_past_end() -> None:
    data = JG6_NO_PROTOCOLS + (
        b"\x01"                # 22 one tagged field
        b"\x00"                # 23 tag 0
        b"\x0a"                # 24 size 10
        b"\x01\x02"            # 25-26 only 2 bytes
    )
    check(data, "JoinGroupRequest", 6, "length-past-end", "JoinGroupRequest.<tag 0>", 25)


# ApiVersionsResponse v3 has known tagged fields: FinalizedFeaturesEpoch is tag 1 (int64).
AV3_HEAD = (
    b"\x00\x00"                # 0-1 ErrorCode
    b"\x01"                    # 2   ApiKeys: empty compact array
    b"\x00\x00\x00\x00"        # 3-6 ThrottleTimeMs
)


def test_known_tagged_field_decodes() -> None:
    data = AV3_HEAD + b"\x01" + b"\x01\x08" + b"\x00\x00\x00\x00\x00\x00\x00\x2a"
    assert REG["ApiVersionsResponse"].decode(data, 3).finalized_features_epoch == 42  # type: ignore[attr-defined]


def test_tagged_field_value_shorter_than_declared_size() -> None:
    data = AV3_HEAD + (
        b"\x01"                # 7     one tagged field
        b"\x01\x09"            # 8-9   tag 1 (FinalizedFeaturesEpoch), size 9
        b"\x00\x00\x00\x00"    # 10-17 the int64
        b"\x00\x00\x00\x00"
        b"\x00"                # 18    a ninth byte the value does not use
    )
    e = check(data, "ApiVersionsResponse", 3, "tagged-field-size",
              "ApiVersionsResponse.FinalizedFeaturesEpoch", 18)
    assert "declared 9 byte(s) but its value used 8" in e.message


def test_tagged_field_value_longer_than_declared_size() -> None:
    data = AV3_HEAD + b"\x01" + b"\x01\x04" + b"\x00" * 4  # size 4: the int64 does not fit
    check(data, "ApiVersionsResponse", 3, "truncated", "ApiVersionsResponse.FinalizedFeaturesEpoch", 10)


def test_error_inside_a_tagged_array_of_structs_is_pathed() -> None:
    data = AV3_HEAD + (
        b"\x01"                # 7     one tagged field
        b"\x00\x06"            # 8-9   tag 0 (SupportedFeatures), size 6
        b"\x02"                # 10    1 element
        b"\x02\xff"            # 11-12 [0].Name: 1 byte, not UTF-8
        b"\x00\x01\x00"        # 13-15 [0].MinVersion + 1 byte of MaxVersion
    )
    check(data, "ApiVersionsResponse", 3, "invalid-utf8", "ApiVersionsResponse.SupportedFeatures[0].Name", 12)


def test_error_inside_a_tagged_struct_is_pathed() -> None:
    # FetchRequest v15: ReplicaState is tag 1, a struct of ReplicaId int32, ReplicaEpoch int64.
    data = (
        b"\x00\x00\x00\x00"    # 0-3   MaxWaitMs
        b"\x00\x00\x00\x00"    # 4-7   MinBytes
        b"\x7f\xff\xff\xff"    # 8-11  MaxBytes
        b"\x00"                # 12    IsolationLevel
        b"\x00\x00\x00\x00"    # 13-16 SessionId
        b"\xff\xff\xff\xff"    # 17-20 SessionEpoch
        b"\x01\x01\x01"        # 21-23 Topics [], ForgottenTopicsData [], RackId ""
        b"\x01"                # 24    one tagged field
        b"\x01\x03"            # 25-26 tag 1 (ReplicaState), size 3
        b"\x00\x00\x01"        # 27-29 3 of ReplicaId's 4 bytes
    )
    check(data, "FetchRequest", 15, "truncated", "FetchRequest.ReplicaState.ReplicaId", 27)
    whole = data[:25] + b"\x01\x0d" + b"\x00\x00\x00\x01" + b"\x00" * 7 + b"\x02" + b"\x00"
    assert REG["FetchRequest"].decode(whole, 15).replica_state.replica_epoch == 2  # type: ignore[attr-defined]


def test_missing_tagged_field_section() -> None:
    check(JG6_NO_PROTOCOLS, "JoinGroupRequest", 6, "truncated", "JoinGroupRequest.<tagged fields>", 22)


def test_unknown_tagged_fields_are_kept_and_reemitted() -> None:
    data = JG6_HEAD + (
        b"\x02"                # 21    Protocols: 1 element
        b"\x02a\x02\x07"       # 22-25 [0]: Name "a", Metadata 0x07
        b"\x01"                # 26    [0]: one tagged field
        b"\x09\x02\xbe\xef"    # 27-30 tag 9, 2 bytes
        b"\x02"                # 31    top level: two tagged fields
        b"\x07\x01\x2a"        # 32-34 tag 7, 1 byte
        b"\x8f\x01\x00"        # 35-37 tag 143 (two-byte varint), empty
    )
    msg = JG.decode(data, 6)
    assert msg._unknown_tags == {7: b"\x2a", 143: b""}
    assert msg.protocols[0]._unknown_tags == {9: b"\xbe\xef"}  # type: ignore[attr-defined]
    assert JG.encode(msg, 6) == data
    assert msg.to_json()["_unknownTaggedFields"] == {"7": "2a", "143": ""}


# ------------------------------------------------------------ varints, UTF-8
def test_varint_longer_than_five_bytes() -> None:
    data = b"\x80\x80\x80\x80\x80\x01"  # GroupId compact length: six varint bytes
    e = check(data, "JoinGroupRequest", 6, "varint-too-long", "JoinGroupRequest.GroupId", 0)
    assert "5 bytes" in e.message


def test_varint_over_32_bits() -> None:
    data = b"\xff\xff\xff\xff\x1f"  # five bytes, but the value needs 35 bits
    check(data, "JoinGroupRequest", 6, "varint-too-long", "JoinGroupRequest.GroupId", 0)


def test_varint_cut_short() -> None:
    check(b"\x80\x80", "JoinGroupRequest", 6, "truncated", "JoinGroupRequest.GroupId", 0)


def test_tag_varint_too_long() -> None:
    data = JG6_NO_PROTOCOLS + b"\x01" + b"\x80\x80\x80\x80\x80\x00"  # tag number of 6 bytes at 23
    check(data, "JoinGroupRequest", 6, "varint-too-long", "JoinGroupRequest.<tag>", 23)


def test_invalid_utf8() -> None:
    data = b"\x00\x03a\xffb"  # GroupId: "a", 0xff, "b"; 0xff is never valid UTF-8
    e = check(data, "JoinGroupRequest", 0, "invalid-utf8", "JoinGroupRequest.GroupId", 3)
    assert "UTF-8" in e.message


def test_invalid_utf8_deep_in_a_nested_struct() -> None:
    data = JG0_HEAD + (
        b"\x00\x00\x00\x02"    # 19-22 Protocols: 2
        + PROTO_A +            # 23-30 [0]
        b"\x00\x02\xc3\x28"    # 31-34 [1].Name: 0xc3 0x28 is a broken 2-byte sequence
        b"\x00\x00\x00\x00"    # 35-38 [1].Metadata
    )
    check(data, "JoinGroupRequest", 0, "invalid-utf8", "JoinGroupRequest.Protocols[1].Name", 33)


# ------------------------------------------------------------ nested paths
def test_nested_path_with_index() -> None:
    data = JG0_HEAD + (
        b"\x00\x00\x00\x02"    # 19-22 Protocols: 2 elements
        + PROTO_A +            # 23-30 [0]: Name "a", Metadata 0x01
        b"\x00\x01b"           # 31-33 [1].Name "b"
        b"\x00\x00\x00\x10"    # 34-37 [1].Metadata: length 16
        b"\x00\x00"            # 38-39 only 2 bytes
    )
    check(data, "JoinGroupRequest", 0, "length-past-end", "JoinGroupRequest.Protocols[1].Metadata", 38)


def test_string_array_element_path_has_its_index() -> None:
    data = (
        b"\x00\x00\x00\x02"    # 0-3 Groups: 2
        b"\x00\x01a"           # 4-6 [0] "a"
        b"\x00\x01\xff"        # 7-9 [1]: not UTF-8
    )
    check(data, "DescribeGroupsRequest", 0, "invalid-utf8", "DescribeGroupsRequest.Groups[1]", 9)


def test_null_element_in_a_nullable_string_array() -> None:
    # SubscribedTopicNames is a nullable []string: the array may be null, its elements may not.
    data = (
        b"\x02g"               # 0     GroupId "g"
        b"\x01"                # 2     MemberId ""
        b"\x00\x00\x00\x00"    # 3-6   MemberEpoch
        b"\x00\x00"            # 7-8   InstanceId, RackId: null
        b"\xff\xff\xff\xff"    # 9-12  RebalanceTimeoutMs
        b"\x03"                # 13    SubscribedTopicNames: 2 elements
        b"\x02a"               # 14-15 [0] "a"
        b"\x00"                # 16    [1] null
        b"\x00\x00\x00"        # 17-19 ServerAssignor, TopicPartitions: null; no tags (v0 has no regex)
    )
    check(data, "ConsumerGroupHeartbeatRequest", 0, "null-not-nullable",
          "ConsumerGroupHeartbeatRequest.SubscribedTopicNames[1]", 16)
    ok = data[:13] + b"\x00" + data[17:]  # the array itself null: fine
    assert REG["ConsumerGroupHeartbeatRequest"].decode(ok, 0).subscribed_topic_names is None  # type: ignore[attr-defined]


# ------------------------------------------------------------ frames
def test_unsupported_version_keeps_the_header() -> None:
    frame = (
        b"\x00\x0b"            # 0-1  RequestApiKey 11 (JoinGroup)
        b"\x00\x0a"            # 2-3  RequestApiVersion 10: JoinGroup stops at 9
        b"\x00\x00\x00\x07"    # 4-7  CorrelationId 7
        b"\x00\x01c"           # 8-10 ClientId "c"
        b"\x00\x00"            # 11-  body (never read)
    )
    e = decode_error(lambda: decode_request(REG, frame))
    assert (e.rule, e.path, e.offset) == ("unsupported-version", "JoinGroupRequest", 11)
    assert e.header is not None
    assert e.header.correlation_id == 7  # type: ignore[attr-defined]
    assert e.header.client_id == "c"  # type: ignore[attr-defined]
    assert e.header.request_api_version == 10  # type: ignore[attr-defined]


def test_unsupported_version_of_a_message_type() -> None:
    e = decode_error(lambda: JG.decode(b"", 10))
    assert (e.rule, e.path, e.offset) == ("unsupported-version", "JoinGroupRequest", 0)


def test_unknown_api_key() -> None:
    frame = b"\x03\xe7" + b"\x00\x00" + b"\x00\x00\x00\x01" + b"\xff\xff"  # API key 999
    e = decode_error(lambda: decode_request(REG, frame))
    assert (e.rule, e.path, e.offset) == ("unknown-api-key", "RequestHeader.RequestApiKey", 0)
    assert "999" in e.message


def test_frame_shorter_than_key_and_version() -> None:
    e = decode_error(lambda: decode_request(REG, b"\x00\x0b\x00"))
    assert (e.rule, e.path, e.offset) == ("truncated", "RequestHeader.RequestApiKey", 0)


def test_body_errors_in_a_frame_are_offset_by_the_header() -> None:
    header = b"\x00\x0b\x00\x00" + b"\x00\x00\x00\x05" + b"\x00\x00"  # 0-9 JoinGroup v0, ClientId ""
    e = decode_error(lambda: decode_request(REG, header + b"\xff\xfe"))
    assert (e.rule, e.path, e.offset) == ("negative-length", "JoinGroupRequest.GroupId", 10)
    assert e.header.correlation_id == 5  # type: ignore[attr-defined]
    e = decode_error(lambda: decode_request(REG, header + b"\xff\xfe", base=4))
    assert e.offset == 14


# ------------------------------------------------------------ positive cases
def test_nullable_fields_accept_null() -> None:
    v5 = (
        b"\x00\x01g" b"\x00\x00\x75\x30" b"\xff\xff\xff\xff" b"\x00\x00"  # GroupId .. MemberId
        b"\xff\xff"            # GroupInstanceId: null (-1), nullable in v5+
        b"\x00\x00" b"\x00\x00\x00\x00"  # ProtocolType "", Protocols []
    )
    assert JG.decode(v5, 5).group_instance_id is None  # type: ignore[attr-defined]
    assert JG.encode(JG.decode(v5, 5), 5) == v5
    v8 = JG6_NO_PROTOCOLS + b"\x00" + b"\x00"  # Reason: compact null; no tags
    msg = JG.decode(v8, 8)
    assert (msg.group_instance_id, msg.reason) == (None, None)  # type: ignore[attr-defined]
    assert JG.encode(msg, 8) == v8


def test_request_header_v2_client_id_is_a_classic_nullable_string() -> None:
    frame = (
        b"\x00\x0b\x00\x06"    # 0-3   JoinGroup v6 (flexible: header v2)
        b"\x00\x00\x00\x2a"    # 4-7   CorrelationId 42
        b"\x00\x03abc"         # 8-12  ClientId: int16 length, not compact
        b"\x00"                # 13    header tagged fields
        + JG6_NO_PROTOCOLS + b"\x00"
    )
    req = decode_request(REG, frame)
    assert (req.header_version, req.correlation_id, req.header.client_id) == (2, 42, "abc")  # type: ignore[attr-defined]
    assert encode_request(REG, req.body, 6, 42, "abc") == frame
    null_id = frame[:8] + b"\xff\xff" + frame[13:]
    req = decode_request(REG, null_id)
    assert req.header.client_id is None  # type: ignore[attr-defined]
    assert encode_request(REG, req.body, 6, 42, None) == null_id


def test_request_header_v2_rejects_a_compact_client_id() -> None:
    # A client that wrongly sends a compact ClientId "abc" (0x04 'abc') is caught.
    frame = b"\x00\x0b\x00\x06" + b"\x00\x00\x00\x2a" + b"\x04abc\x00" + JG6_NO_PROTOCOLS + b"\x00"
    e = decode_error(lambda: decode_request(REG, frame))
    assert (e.rule, e.path, e.offset) == ("length-past-end", "RequestHeader.ClientId", 10)


def test_api_versions_response_header_is_v0_even_when_flexible() -> None:
    av = REG["ApiVersionsResponse"]
    frame = encode_response(REG, av.new(), 3, 9)
    assert frame == (
        b"\x00\x00\x00\x09"    # CorrelationId; no header tagged fields (header v0)
        b"\x00\x00" b"\x01" b"\x00\x00\x00\x00" b"\x00"  # ErrorCode, ApiKeys, Throttle, tags
    )
    resp = decode_response(REG, frame, 18, 3)
    assert (resp.header_version, resp.correlation_id) == (0, 9)
    # Other flexible responses carry header v1 with its tagged-field byte.
    hb = encode_response(REG, REG["HeartbeatResponse"].new(), 4, 9)
    assert hb[:5] == b"\x00\x00\x00\x09\x00"
    assert decode_response(REG, hb, 12, 4).header_version == 1


# ------------------------------------------------------------ encoding errors
def encode_error(obj: Struct, version: int) -> EncodeError:
    with pytest.raises(EncodeError) as info:
        REG.of(obj).encode(obj, version)
    return info.value


def test_encode_none_in_non_nullable_field() -> None:
    e = encode_error(JG.new(group_id=None), 5)
    assert (e.path, e.rule) == ("JoinGroupRequest.GroupId", "null-not-nullable")


def test_encode_none_in_a_nested_field() -> None:
    proto = JG.cls.JoinGroupRequestProtocol
    e = encode_error(JG.new(protocols=[proto(name="a"), proto(name=None)]), 7)
    assert (e.path, e.rule) == ("JoinGroupRequest.Protocols[1].Name", "null-not-nullable")


def test_encode_none_element_of_a_nullable_array() -> None:
    cgh = REG["ConsumerGroupHeartbeatRequest"]
    e = encode_error(cgh.new(subscribed_topic_names=["a", None]), 0)
    assert (e.path, e.rule) == ("ConsumerGroupHeartbeatRequest.SubscribedTopicNames[1]", "null-not-nullable")


def test_encode_field_absent_at_version() -> None:
    e = encode_error(JG.new(group_instance_id="static-1"), 0)
    assert (e.path, e.rule) == ("JoinGroupRequest.GroupInstanceId", "field-not-in-version")
    # An ignorable field absent at the version is dropped silently, as Kafka does.
    assert JG.encode(JG.new(rebalance_timeout_ms=5), 0) == JG.encode(JG.new(), 0)


def test_encode_string_too_long_in_non_flexible_version() -> None:
    e = encode_error(JG.new(member_id="x" * 32768), 5)
    assert (e.path, e.rule) == ("JoinGroupRequest.MemberId", "too-long")
    assert JG.decode(JG.encode(JG.new(member_id="x" * 32767), 5), 5).member_id == "x" * 32767  # type: ignore[attr-defined]


@pytest.mark.parametrize("field, value", [
    ("session_timeout_ms", 2**31),
    ("rebalance_timeout_ms", -(2**31) - 1),
])
def test_encode_int_out_of_range_names_the_field(field: str, value: int) -> None:
    # Both fields are packed as one run; the error must still say which one is wrong.
    e = encode_error(JG.new(**{field: value}), 5)
    name = "SessionTimeoutMs" if field == "session_timeout_ms" else "RebalanceTimeoutMs"
    assert (e.path, e.rule) == (f"JoinGroupRequest.{name}", "invalid-value")


def test_encode_wrong_type_names_the_nested_field() -> None:
    proto = JG.cls.JoinGroupRequestProtocol
    e = encode_error(JG.new(protocols=[proto(name="a", metadata=5)]), 9)
    assert (e.path, e.rule) == ("JoinGroupRequest.Protocols[0].Metadata", "invalid-value")
    e = encode_error(JG.new(group_id=b"g"), 9)
    assert (e.path, e.rule) == ("JoinGroupRequest.GroupId", "invalid-value")
