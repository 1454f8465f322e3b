"""Known byte vectors of Connect's embedded protocol (schemas/connect).

The JoinGroup metadata and SyncGroup assignment of protocol type ``connect`` are opaque
bytes to the broker: an int16 version prefix, then the struct of that version
(``MessageType.encode_versioned`` / ``decode_versioned``).

The first vector is the one Kafka Connect itself writes for a v0 worker at
``leaderUrl:8083`` with config offset 1. The others are assembled byte by byte with
``struct.pack`` from the layout of KIP-415's "Connect protocol's format" (and KIP-507's v2),
independently of the codec, so a spec file and its hand layout must agree.
"""

from __future__ import annotations

import struct

import pytest

from fakebroker.protocol import default_registry

REGISTRY = default_registry()

pytestmark = pytest.mark.skipif("ConnectProtocolMetadata" not in REGISTRY,
                                reason="schemas/connect/ConnectProtocolMetadata.json is not there")


def s16(text: str) -> bytes:
    b = text.encode()
    return struct.pack(">h", len(b)) + b


def test_worker_metadata_v0_vector() -> None:
    mt = REGISTRY["ConnectProtocolMetadata"]
    obj = mt.new(url="leaderUrl:8083", config_offset=1)
    expected = bytes.fromhex("0000000e6c656164657255726c3a383038330000000000000001")
    assert mt.encode_versioned(obj, 0) == expected
    assert mt.decode_versioned(expected) == (0, obj)


@pytest.mark.parametrize("version", [1, 2])
def test_worker_metadata_v1_v2_with_and_without_allocation(version: int) -> None:
    meta = REGISTRY["ConnectProtocolMetadata"]
    asg = REGISTRY["ConnectProtocolAssignment"]
    allocation = asg.new(error=0, leader="w1", leader_url="http://w1:8083", config_offset=7,
                         assignment=[asg.cls.ConnectorAssignment(connector="c1", tasks=[-1, 0])])
    allocation_bytes = asg.encode_versioned(allocation, version)
    for alloc, tail in ((None, struct.pack(">i", -1)),
                        (allocation_bytes, struct.pack(">i", len(allocation_bytes)) + allocation_bytes)):
        obj = meta.new(url="http://w2:8083", config_offset=7, allocation=alloc)
        expected = struct.pack(">h", version) + s16("http://w2:8083") + struct.pack(">q", 7) + tail
        assert meta.encode_versioned(obj, version) == expected
        assert meta.decode_versioned(expected) == (version, obj)


def test_assignment_v0_vector() -> None:
    mt = REGISTRY["ConnectProtocolAssignment"]
    obj = mt.new(error=1, leader="leader-1", leader_url="http://l:8083", config_offset=42,
                 assignment=[mt.cls.ConnectorAssignment(connector="c1", tasks=[-1, 0, 1]),
                             mt.cls.ConnectorAssignment(connector="c2", tasks=[])])
    expected = (struct.pack(">hh", 0, 1) + s16("leader-1") + s16("http://l:8083") + struct.pack(">q", 42)
                + struct.pack(">i", 2)
                + s16("c1") + struct.pack(">i", 3) + struct.pack(">iii", -1, 0, 1)
                + s16("c2") + struct.pack(">i", 0))
    assert mt.encode_versioned(obj, 0) == expected
    assert mt.decode_versioned(expected) == (0, obj)


@pytest.mark.parametrize("version", [1, 2])
def test_assignment_v1_v2_vector(version: int) -> None:
    mt = REGISTRY["ConnectProtocolAssignment"]
    obj = mt.new(error=0, leader="l", leader_url="u", config_offset=-1,
                 assignment=[mt.cls.ConnectorAssignment(connector="c", tasks=[3])],
                 revoked=None, scheduled_delay=30000)
    expected = (struct.pack(">hh", version, 0) + s16("l") + s16("u") + struct.pack(">q", -1)
                + struct.pack(">i", 1) + s16("c") + struct.pack(">ii", 1, 3)
                + struct.pack(">i", -1)  # revoked: null
                + struct.pack(">i", 30000))
    assert mt.encode_versioned(obj, version) == expected
    assert mt.decode_versioned(expected) == (version, obj)
