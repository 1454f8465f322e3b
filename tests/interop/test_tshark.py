"""Our codec's frames, exported by ``fakebroker.script.pcap``, read back by Wireshark's Kafka
dissector (tshark): an independent implementation must see the field values we encoded,
and the TCP streams we write must reassemble without a single complaint.

Only flexible versions are checked: tshark 4.0 mis-reads ``bytes`` fields in non-flexible
versions, which would test tshark rather than us.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from fakebroker.protocol import Struct, default_registry
from fakebroker.protocol.framing import encode_request, encode_response
from fakebroker.script.pcap import Exchange, LOOPBACK_MSS, pcap_bytes, write_pcap

REG = default_registry()
PORT = 9092
INSTALL_HINT = ("tshark is not installed: install the Debian package `tshark` "
                "(apt-get install -y tshark); CI installs it, and these tests never skip")

# tshark's renderings: an FT_STRING null, and FT_BYTES as colon-separated hex.
NULL = "[ Null ]"


def hexbytes(b: bytes) -> str:
    return ":".join(f"{x:02x}" for x in b)


# --- the exchanges ---------------------------------------------------------------------

@dataclass
class Case:
    """One request and its response on a connection of their own."""

    name: str
    api: str
    version: int
    correlation_id: int
    client_id: str | None
    request: Struct
    response: Struct
    # tshark field -> every value it shows in the PDU, in order (nested ones included).
    want_request: dict[str, list[str]]
    want_response: dict[str, list[str]]
    pipelined_with: str | None = None  # a case whose request goes out before ours is answered


def _new(name: str, **fields: Any) -> Struct:
    return REG[name].new(**fields)


def _cls(name: str, nested: str) -> Callable[..., Struct]:
    return getattr(REG[name].cls, nested)


GROUP = "connect-cluster"
LEADER = "connect-1-5f0e1c7a-6c1e-4a2b-9a53-0c3b2e8f8d11"
FOLLOWER = "connect-2-0b9d6d40-2a8e-4f0d-8e5f-2c6f0d0e7a42"
META_1 = b"\x00\x01\x00\x00\x00\x10http://w1:8083/\x00\x00\x00\x00\x00\x00\x00\x07"
META_2 = b"\x00\x02\x00\x00\x00\x10http://w2:8083/\x00\x00\x00\x00\x00\x00\x00\x07\xff\xff\xff\xff"
ASSIGN_1 = b"\x00\x01\x00\x00\x00\x02\x00\x02L1\x00\x10http://w1:8083/\x00\x00\x00\x00\x00\x00\x00\x07"
BIG_META = bytes(range(256)) * 600  # 153,600 bytes: three loopback segments


def _cases() -> list[Case]:
    cases: list[Case] = []
    jg_proto = _cls("JoinGroupRequest", "JoinGroupRequestProtocol")
    jg_member = _cls("JoinGroupResponse", "JoinGroupResponseMember")
    for v in (6, 7):
        cases.append(Case(
            f"JoinGroup v{v}", "JoinGroup", v, 1000 + v, "connect-1",
            _new("JoinGroupRequest", group_id=GROUP, session_timeout_ms=10000, rebalance_timeout_ms=60000,
                 member_id=LEADER, group_instance_id=None, protocol_type="connect",
                 protocols=[jg_proto(name="sessioned", metadata=META_2),
                            jg_proto(name="compatible", metadata=META_1)]),
            _new("JoinGroupResponse", throttle_time_ms=0, error_code=0, generation_id=7,
                 protocol_type="connect", protocol_name="sessioned", leader=LEADER, member_id=LEADER,
                 members=[jg_member(member_id=LEADER, group_instance_id=None, metadata=META_2),
                          jg_member(member_id=FOLLOWER, group_instance_id="worker-2", metadata=META_1)]),
            {"kafka.consumer_group": [GROUP], "kafka.session_timeout": ["10000"],
             "kafka.rebalance_timeout": ["60000"], "kafka.member_id": [LEADER],
             "kafka.consumer_group_instance": [NULL], "kafka.protocol_type": ["connect"],
             "kafka.protocol_name": ["sessioned", "compatible"],
             "kafka.protocol_metadata": [hexbytes(META_2), hexbytes(META_1)]},
            {"kafka.throttle_time": ["0"], "kafka.error": ["0"], "kafka.generation_id": ["7"],
             # v7 added ProtocolType to the response; v6 has none to show.
             "kafka.protocol_type": ["connect"] if v >= 7 else [],
             "kafka.protocol_name": ["sessioned"], "kafka.group_leader_id": [LEADER],
             "kafka.member_id": [LEADER, LEADER, FOLLOWER],
             "kafka.consumer_group_instance": [NULL, "worker-2"],
             "kafka.member_metadata": [hexbytes(META_2), hexbytes(META_1)]},
        ))
    # The first join of a new member: an error code and an assigned member id.
    cases.append(Case(
        "JoinGroup v6 MEMBER_ID_REQUIRED", "JoinGroup", 6, 1, None,
        _new("JoinGroupRequest", group_id=GROUP, session_timeout_ms=45000, rebalance_timeout_ms=300000,
             member_id="", group_instance_id=None, protocol_type="connect",
             protocols=[jg_proto(name="eager", metadata=b"")]),
        _new("JoinGroupResponse", throttle_time_ms=12, error_code=79, generation_id=-1,
             protocol_name="", leader="", member_id=FOLLOWER, members=[]),  # null only from v7
        {"kafka.client_id": [NULL], "kafka.consumer_group": [GROUP], "kafka.session_timeout": ["45000"],
         "kafka.rebalance_timeout": ["300000"], "kafka.member_id": [""],
         "kafka.protocol_name": ["eager"], "kafka.protocol_metadata": [""]},
        {"kafka.throttle_time": ["12"], "kafka.error": ["79"], "kafka.generation_id": ["-1"],
         "kafka.protocol_name": [""], "kafka.group_leader_id": [""], "kafka.member_id": [FOLLOWER],
         "kafka.member_metadata": []},
    ))
    # A leader's metadata too big for one segment: tshark must reassemble three.
    cases.append(Case(
        "JoinGroup v7 large", "JoinGroup", 7, 77, "connect-1",
        _new("JoinGroupRequest", group_id=GROUP, session_timeout_ms=10000, rebalance_timeout_ms=60000,
             member_id=LEADER, group_instance_id="worker-1", protocol_type="connect",
             protocols=[jg_proto(name="sessioned", metadata=BIG_META)]),
        _new("JoinGroupResponse", throttle_time_ms=0, error_code=0, generation_id=8,
             protocol_type="connect", protocol_name="sessioned", leader=LEADER, member_id=LEADER,
             members=[jg_member(member_id=LEADER, group_instance_id="worker-1", metadata=BIG_META)]),
        {"kafka.consumer_group": [GROUP], "kafka.member_id": [LEADER],
         "kafka.consumer_group_instance": ["worker-1"], "kafka.protocol_name": ["sessioned"],
         "kafka.protocol_metadata": [hexbytes(BIG_META)]},
        {"kafka.generation_id": ["8"], "kafka.member_id": [LEADER, LEADER],
         "kafka.member_metadata": [hexbytes(BIG_META)]},
    ))

    sg_assign = _cls("SyncGroupRequest", "SyncGroupRequestAssignment")
    for v in (4, 5):
        flex5 = {"protocol_type": "connect", "protocol_name": "sessioned"} if v >= 5 else {}
        cases.append(Case(
            f"SyncGroup v{v}", "SyncGroup", v, 2000 + v, "connect-1",
            _new("SyncGroupRequest", group_id=GROUP, generation_id=7, member_id=LEADER,
                 group_instance_id="worker-1", **flex5,
                 assignments=[sg_assign(member_id=LEADER, assignment=ASSIGN_1),
                              sg_assign(member_id=FOLLOWER, assignment=b"\x00\x01")]),
            _new("SyncGroupResponse", throttle_time_ms=3, error_code=0, **flex5, assignment=ASSIGN_1),
            {"kafka.consumer_group": [GROUP], "kafka.generation_id": ["7"],
             "kafka.member_id": [LEADER, LEADER, FOLLOWER], "kafka.consumer_group_instance": ["worker-1"],
             "kafka.protocol_type": ["connect"] if v >= 5 else [],
             "kafka.protocol_name": ["sessioned"] if v >= 5 else [],
             "kafka.member_assignment": [hexbytes(ASSIGN_1), "00:01"]},
            {"kafka.throttle_time": ["3"], "kafka.error": ["0"],
             "kafka.protocol_type": ["connect"] if v >= 5 else [],
             "kafka.protocol_name": ["sessioned"] if v >= 5 else [],
             "kafka.member_assignment": [hexbytes(ASSIGN_1)]},
        ))

    # Two heartbeats in flight on one connection: tshark pairs them by correlation id.
    for cid, (err, gen) in ((3001, (0, 7)), (3002, (27, 8))):
        cases.append(Case(
            f"Heartbeat v4 #{cid}", "Heartbeat", 4, cid, "connect-2",
            _new("HeartbeatRequest", group_id=GROUP, generation_id=gen, member_id=FOLLOWER,
                 group_instance_id="worker-2"),
            _new("HeartbeatResponse", throttle_time_ms=0, error_code=err),
            {"kafka.consumer_group": [GROUP], "kafka.generation_id": [str(gen)],
             "kafka.member_id": [FOLLOWER], "kafka.consumer_group_instance": ["worker-2"]},
            {"kafka.throttle_time": ["0"], "kafka.error": [str(err)]},
            pipelined_with="Heartbeat v4 #3001" if cid == 3002 else None,
        ))

    lg_member = _cls("LeaveGroupRequest", "MemberIdentity")
    lg_result = _cls("LeaveGroupResponse", "MemberResponse")
    cases.append(Case(
        "LeaveGroup v4", "LeaveGroup", 4, 4004, "connect-2",
        _new("LeaveGroupRequest", group_id=GROUP,
             members=[lg_member(member_id=FOLLOWER, group_instance_id="worker-2"),
                      lg_member(member_id=LEADER, group_instance_id=None)]),
        _new("LeaveGroupResponse", throttle_time_ms=0, error_code=0,
             members=[lg_result(member_id=FOLLOWER, group_instance_id="worker-2", error_code=0),
                      lg_result(member_id=LEADER, group_instance_id=None, error_code=25)]),
        {"kafka.consumer_group": [GROUP], "kafka.member_id": [FOLLOWER, LEADER],
         "kafka.consumer_group_instance": ["worker-2", NULL]},
        {"kafka.throttle_time": ["0"], "kafka.error": ["0", "0", "25"],
         "kafka.member_id": [FOLLOWER, LEADER], "kafka.consumer_group_instance": ["worker-2", NULL]},
    ))

    av_key = _cls("ApiVersionsResponse", "ApiVersion")
    # Maxima tshark 4.0 knows: above them it adds a warning (unsupported_api_version) per key.
    keys = [(18, 0, 3), (11, 0, 7), (14, 0, 5), (12, 0, 4), (13, 0, 4), (3, 0, 9), (10, 0, 3)]
    cases.append(Case(
        "ApiVersions v3", "ApiVersions", 3, 0, "connect-1",
        _new("ApiVersionsRequest", client_software_name="apache-kafka-java", client_software_version="4.2.0"),
        _new("ApiVersionsResponse", error_code=0, throttle_time_ms=0,
             api_keys=[av_key(api_key=k, min_version=lo, max_version=hi) for k, lo, hi in keys]),
        {"kafka.client_software_name": ["apache-kafka-java"], "kafka.client_software_version": ["4.2.0"]},
        {"kafka.error": ["0"], "kafka.throttle_time": ["0"],
         "kafka.api_versions.api_key": [str(k) for k, _, _ in keys],
         "kafka.api_versions.min_version": [str(lo) for _, lo, _ in keys],
         "kafka.api_versions.max_version": [str(hi) for _, _, hi in keys]},
    ))
    # Tagged fields: tshark does not know their names, so it shows tag and raw bytes, which
    # checks our tag order and framing against literal bytes worked out from the spec.
    feature = "metadata.version"
    cases.append(Case(
        "ApiVersions v3 tagged", "ApiVersions", 3, 1, "connect-2",
        _new("ApiVersionsRequest", client_software_name="apache-kafka-java", client_software_version="4.2.0"),
        _new("ApiVersionsResponse", error_code=0, throttle_time_ms=0,
             api_keys=[av_key(api_key=18, min_version=0, max_version=3)],
             supported_features=[_cls("ApiVersionsResponse", "SupportedFeatureKey")(
                 name=feature, min_version=1, max_version=27)],
             finalized_features_epoch=42,
             finalized_features=[_cls("ApiVersionsResponse", "FinalizedFeatureKey")(
                 name=feature, max_version_level=27, min_version_level=26)],
             zk_migration_ready=True),
        {},
        {"kafka.api_versions.api_key": ["18"],
         "kafka.tagged_field_tag": [f"0x{t:016x}" for t in (0, 1, 2, 3)],
         "kafka.tagged_field_data": [
             # compact array of 1, compact string, int16 min, int16 max, no tagged fields
             hexbytes(b"\x02\x11" + feature.encode() + b"\x00\x01\x00\x1b\x00"),
             hexbytes((42).to_bytes(8, "big")),
             hexbytes(b"\x02\x11" + feature.encode() + b"\x00\x1b\x00\x1a\x00"),
             "01"]},
    ))

    md_topic = _cls("MetadataRequest", "MetadataRequestTopic")
    md_broker = _cls("MetadataResponse", "MetadataResponseBroker")
    md_rtopic = _cls("MetadataResponse", "MetadataResponseTopic")
    md_part = _cls("MetadataResponse", "MetadataResponsePartition")
    topics = ["connect-configs", "connect-offsets", "connect-status"]
    cases.append(Case(
        "Metadata v9", "Metadata", 9, 5009, "connect-1",
        _new("MetadataRequest", topics=[md_topic(name=t) for t in topics], allow_auto_topic_creation=False,
             include_cluster_authorized_operations=False, include_topic_authorized_operations=True),
        _new("MetadataResponse", throttle_time_ms=0,
             brokers=[md_broker(node_id=1, host="broker-1.example", port=9092, rack=None),
                      md_broker(node_id=2, host="broker-2.example", port=19092, rack="rack-b")],
             cluster_id="Q8r1cA2pT0mZ4lWvHxYb3w", controller_id=2,
             topics=[md_rtopic(error_code=0, name="connect-configs", is_internal=False,
                               partitions=[md_part(error_code=0, partition_index=0, leader_id=1, leader_epoch=4,
                                                   replica_nodes=[1, 2], isr_nodes=[1, 2], offline_replicas=[])],
                               topic_authorized_operations=-2147483648),
                     md_rtopic(error_code=3, name="connect-offsets", is_internal=False, partitions=[],
                               topic_authorized_operations=-2147483648),
                     md_rtopic(error_code=0, name="connect-status", is_internal=False,
                               partitions=[md_part(error_code=0, partition_index=i, leader_id=2, leader_epoch=0,
                                                   replica_nodes=[2], isr_nodes=[2], offline_replicas=[])
                                           for i in range(3)],
                               topic_authorized_operations=-2147483648)],
             cluster_authorized_operations=-2147483648),
        {"kafka.topic_name": topics, "kafka.allow_auto_topic_creation": ["0"],
         "kafka.include_cluster_authorized_ops": ["0"], "kafka.include_topic_authorized_ops": ["1"]},
        # tshark shows ControllerId with the broker's field, kafka.node_id: hence a third "2".
        {"kafka.throttle_time": ["0"], "kafka.node_id": ["1", "2", "2"],
         "kafka.host": ["broker-1.example", "broker-2.example"],
         "kafka.port": ["9092", "19092"], "kafka.rack": [NULL, "rack-b"],
         "kafka.cluster_id": ["Q8r1cA2pT0mZ4lWvHxYb3w"], "kafka.topic_name": topics,
         "kafka.error": ["0", "0", "3", "0", "0", "0", "0"], "kafka.is_internal": ["0", "0", "0"],
         "kafka.partition_id": ["0", "0", "1", "2"], "kafka.leader_id": ["1", "2", "2", "2"],
         "kafka.leader_epoch": ["4", "0", "0", "0"], "kafka.replica_id": ["1", "2", "2", "2", "2"],
         "kafka.isr_id": ["1", "2", "2", "2", "2"],
         "kafka.topic_authorized_ops": ["0x80000000"] * 3, "kafka.cluster_authorized_ops": ["0x80000000"]},
    ))

    cases.append(Case(
        "FindCoordinator v3", "FindCoordinator", 3, 6003, "connect-1",
        _new("FindCoordinatorRequest", key=GROUP, key_type=0),
        _new("FindCoordinatorResponse", throttle_time_ms=0, error_code=0, error_message=None,
             node_id=2, host="broker-2.example", port=19092),
        {"kafka.coordinator_key": [GROUP], "kafka.coordinator_type": ["0"]},
        {"kafka.throttle_time": ["0"], "kafka.error": ["0"], "kafka.error_message": [NULL],
         "kafka.node_id": ["2"], "kafka.host": ["broker-2.example"], "kafka.port": ["19092"]},
    ))
    cases.append(Case(
        "FindCoordinator v3 error", "FindCoordinator", 3, 6004, "connect-1",
        _new("FindCoordinatorRequest", key=GROUP, key_type=0),
        _new("FindCoordinatorResponse", throttle_time_ms=0, error_code=15,
             error_message="The coordinator is not available.", node_id=-1, host="", port=-1),
        {"kafka.coordinator_key": [GROUP]},
        {"kafka.error": ["15"], "kafka.error_message": ["The coordinator is not available."],
         "kafka.node_id": ["-1"], "kafka.host": [""], "kafka.port": ["-1"]},
    ))
    return cases


CASES = _cases()


def _exchanges(cases: list[Case]) -> list[Exchange]:
    """Each case on its own connection, request then response; a pipelined case shares its
    partner's connection and sends its request before the partner's response."""
    out: list[Exchange] = []
    t = 1_700_000_000.0
    pending: dict[str, Exchange] = {}
    for c in cases:
        t += 0.010
        api_key = REG[c.api + "Request"].api_key
        assert api_key is not None
        conn = c.pipelined_with or c.name
        req = Exchange(conn, "request", encode_request(REG, c.request, c.version, c.correlation_id, c.client_id,
                                                       size_prefix=True), t)
        resp = Exchange(conn, "response", encode_response(REG, c.response, c.version, c.correlation_id,
                                                          size_prefix=True), t + 0.002)
        if c.pipelined_with:
            out.append(req)
            out.append(pending.pop(c.pipelined_with))
            out.append(resp)
        elif any(o.pipelined_with == c.name for o in cases):
            out.append(req)
            pending[c.name] = resp
        else:
            out += [req, resp]
    assert not pending
    return out


# --- running tshark --------------------------------------------------------------------

def _tshark() -> str:
    path = shutil.which("tshark")
    if path is None:
        pytest.fail(INSTALL_HINT, pytrace=False)
    return path


def _run_tshark(pcap: Path, *args: str) -> str:
    env = dict(os.environ, WIRESHARK_CONFIG_DIR=str(pcap.parent / "wireshark-home"))  # no personal prefs
    cmd = [_tshark(), "-n", "-r", str(pcap), "-d", f"tcp.port=={PORT},kafka",
           "-o", "ip.check_checksum:TRUE", "-o", "tcp.check_checksum:TRUE", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr}"
    return proc.stdout


def _walk(node: Any, key: str = "") -> Iterator[tuple[str, Any]]:
    """Every (field, value) in a ``-T json`` tree, in document order, dicts included."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _walk(v, k)
    elif isinstance(node, list):
        for v in node:
            yield from _walk(v, key)
        return
    if key:
        yield key, node


def _fields(node: Any) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for k, v in _walk(node):
        if isinstance(v, str):
            out[k].append(v)
    return out


@dataclass
class Packet:
    number: int
    layers: dict[str, Any]
    pdus: list[dict[str, list[str]]] = field(default_factory=list)  # kafka layers, flattened

    def one(self, name: str) -> str:
        (value,) = _fields(self.layers)[name]
        return value


@dataclass
class Dissection:
    packets: list[Packet]
    expert_text: str


_DISSECTIONS: dict[Path, Dissection] = {}


def dissect(pcap: Path) -> Dissection:
    """tshark's reading of the capture (two passes, so request/response links are final)."""
    if pcap not in _DISSECTIONS:
        raw = json.loads(_run_tshark(pcap, "-2", "-T", "json", "--no-duplicate-keys"))
        packets = []
        for p in raw:
            layers = p["_source"]["layers"]
            pkt = Packet(int(layers["frame"]["frame.number"]), layers)
            kafka = layers.get("kafka", [])
            pkt.pdus = [_fields(k) for k in (kafka if isinstance(kafka, list) else [kafka])]
            packets.append(pkt)
        expert = _run_tshark(pcap, "-2", "-q", "-z", "expert")
        _DISSECTIONS[pcap] = Dissection(packets, expert)
    return _DISSECTIONS[pcap]


# Loopback's MSS, and the classic 536 that splits most frames, so every field is also read
# from reassembled segments.
@pytest.fixture(scope="module", params=[LOOPBACK_MSS, 536], ids=lambda m: f"mss{m}")
def capture(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("pcap") / f"kafka-mss{request.param}.pcap"
    write_pcap(_exchanges(CASES), path, server_port=PORT, mss=request.param)
    _MSS[path] = request.param
    return path


_MSS: dict[Path, int] = {}


def _pdus_by_stream(d: Dissection) -> dict[int, list[tuple[Packet, dict[str, list[str]]]]]:
    out: dict[int, list[tuple[Packet, dict[str, list[str]]]]] = defaultdict(list)
    for p in d.packets:
        for pdu in p.pdus:
            out[int(p.one("tcp.stream"))].append((p, pdu))
    return out


def _case_pdus(d: Dissection, case: Case) -> tuple[tuple[Packet, dict[str, list[str]]],
                                                   tuple[Packet, dict[str, list[str]]]]:
    """The request and response PDUs of a case, found by connection order and correlation id."""
    conns = list(dict.fromkeys(c.pipelined_with or c.name for c in CASES))
    stream = conns.index(case.pipelined_with or case.name)  # tshark numbers streams by first SYN
    pdus = _pdus_by_stream(d)[stream]
    mine = [(p, f) for p, f in pdus if f.get("kafka.correlation_id") == [str(case.correlation_id)]]
    assert len(mine) == 2, f"{case.name}: want a request and a response in stream {stream}, got {mine}"
    return mine[0], mine[1]


def _check(got: dict[str, list[str]], want: dict[str, list[str]], what: str) -> None:
    diffs = {k: (got.get(k, []), v) for k, v in want.items() if got.get(k, []) != v}
    assert not diffs, f"{what}: tshark shows {{field: (tshark, ours)}} {diffs}"


# --- the tests -------------------------------------------------------------------------

@pytest.mark.tshark
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_tshark_reads_our_fields(capture: Path, case: Case) -> None:
    d = dissect(capture)
    (req_pkt, req), (_, resp) = _case_pdus(d, case)
    api_key = str(REG[case.api + "Request"].api_key)
    header = {"kafka.request_key": [api_key], "kafka.api_key": [api_key],
              "kafka.request.version": [str(case.version)], "kafka.api_version": [str(case.version)],
              "kafka.correlation_id": [str(case.correlation_id)],
              "kafka.client_id": [case.client_id if case.client_id is not None else NULL]}
    _check(req, header | case.want_request, f"{case.name} request")
    # Responses do not carry their API: tshark shows what it inferred from the request.
    _check(resp, {"kafka.response_key": [api_key], "kafka.api_key": [api_key],
                  "kafka.response.version": [str(case.version)],
                  "kafka.correlation_id": [str(case.correlation_id)],
                  "kafka.request_frame": [str(req_pkt.number)]} | case.want_response,
           f"{case.name} response")
    # (tshark 4.0 never shows the reverse link, kafka.response_frame, even in two passes.)
    for what, pdu in (("request", req), ("response", resp)):
        assert "_ws.expert" not in pdu and "kafka.len" in pdu, f"{case.name} {what}: {pdu}"


@pytest.mark.tshark
def test_every_frame_dissected_once(capture: Path) -> None:
    d = dissect(capture)
    got = [(p.one("tcp.stream"), pdu["kafka.correlation_id"][0], "kafka.request_key" in pdu)
           for p in d.packets for pdu in p.pdus]
    assert len(got) == 2 * len(CASES)
    assert len(set(got)) == len(got), "a frame dissected twice"


@pytest.mark.tshark
def test_streams_reassemble_cleanly(capture: Path) -> None:
    d = dissect(capture)
    assert not any("_ws.malformed" in p.layers for p in d.packets)
    bad = []
    for p in d.packets:
        for k, v in _walk(p.layers):
            if k == "_ws.expert.severity" and int(v) >= 0x00600000:  # PI_WARN and above
                bad.append(p.number)
            if k in ("tcp.analysis.flags", "_ws.malformed") or k.startswith("kafka.") and k in (
                    "kafka.bad_string_length", "kafka.bad_bytes_length", "kafka.bad_array_length",
                    "kafka.bad_varint", "kafka.request_missing", "kafka.unknown_api_key",
                    "kafka.unsupported_api_version"):
                bad.append(p.number)
        assert p.one("ip.checksum.status") == "1" and p.one("tcp.checksum.status") == "1", p.number
    assert not bad, f"frames with complaints: {sorted(set(bad))}"
    # The summary tshark prints for humans says the same: nothing above notes.
    assert "Errors (" not in d.expert_text and "Warns (" not in d.expert_text, d.expert_text
    assert "Malformed" not in d.expert_text, d.expert_text


@pytest.mark.tshark
def test_large_frame_spans_segments(capture: Path) -> None:
    d = dissect(capture)
    case = next(c for c in CASES if c.name == "JoinGroup v7 large")
    (req_pkt, _), (resp_pkt, _) = _case_pdus(d, case)
    for pkt in (req_pkt, resp_pkt):
        size = int(_fields(pkt.layers)["kafka.len"][0]) + 4
        segments = -(-size // _MSS[capture])
        assert segments >= 3
        assert pkt.one("tcp.segment.count") == str(segments)
        assert pkt.one("tcp.reassembled.length") == str(size)


@pytest.mark.tshark
def test_tcp_lifecycle(capture: Path) -> None:
    d = dissect(capture)
    streams: dict[str, list[Packet]] = defaultdict(list)
    for p in d.packets:
        streams[p.one("tcp.stream")].append(p)
    assert len(streams) == len({c.pipelined_with or c.name for c in CASES})
    for s, pkts in streams.items():
        flags = [p.one("tcp.flags") for p in pkts]
        assert flags[:3] == ["0x0002", "0x0012", "0x0010"], f"stream {s}: handshake {flags[:3]}"
        assert flags[-3:] == ["0x0011", "0x0011", "0x0010"], f"stream {s}: teardown {flags[-3:]}"
        # SYN, SYN-ACK, ACK, data and FIN seen (tshark's tcp.completeness bits 1|2|4|8|16).
        assert pkts[-1].one("tcp.completeness") == "31", s
        client = pkts[0].one("tcp.srcport")
        assert 49152 <= int(client) <= 65535 and pkts[0].one("tcp.dstport") == str(PORT)
    ports = [pkts[0].one("tcp.srcport") for pkts in streams.values()]
    assert len(set(ports)) == len(ports), "two connections share a client port"
    times = [float(p.one("frame.time_epoch")) for p in d.packets]
    assert times == sorted(times) and len(set(times)) == len(times)


def test_pcap_is_deterministic() -> None:
    ex = _exchanges(CASES)
    assert pcap_bytes(ex) == pcap_bytes(list(ex))
    assert pcap_bytes(ex) != pcap_bytes(ex, server_port=9093)
