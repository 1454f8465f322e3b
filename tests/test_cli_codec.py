"""``fakebroker decode`` / ``fakebroker encode`` as a user runs them: in a subprocess.

Exit statuses are part of the interface: 0 success, 1 malformed input (one line on stderr
naming the field path, byte offset and rule), 2 usage errors.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import fakebroker

ROOT = Path(__file__).resolve().parents[1]

# JoinGroup v9 request (flexible: request header v2).
REQUEST_HEX = (
    "000b" "0009"            # RequestApiKey 11, RequestApiVersion 9
    "00000007"               # CorrelationId 7
    "000163"                 # ClientId "c" (classic int16 length even in header v2)
    "00"                     # header tagged fields
    "0267"                   # GroupId "g"
    "00000000"               # SessionTimeoutMs 0
    "ffffffff"               # RebalanceTimeoutMs -1
    "01"                     # MemberId ""
    "00"                     # GroupInstanceId null
    "08636f6e6e656374"       # ProtocolType "connect"
    "02"                     # Protocols: 1
    "0a73657373696f6e6564"   #   [0].Name "sessioned"
    "030102"                 #   [0].Metadata 0x0102
    "00"                     #   [0] tagged fields
    "00"                     # Reason null
    "00"                     # tagged fields
)
REQUEST_BODY = {
    "GroupId": "g", "SessionTimeoutMs": 0, "RebalanceTimeoutMs": -1, "MemberId": "",
    "GroupInstanceId": None, "ProtocolType": "connect",
    "Protocols": [{"Name": "sessioned", "Metadata": "0102"}], "Reason": None,
}
# JoinGroup v9 response (response header v1).
RESPONSE_HEX = (
    "00000007" "00"          # CorrelationId 7, header tagged fields
    "00000000"               # ThrottleTimeMs
    "0000"                   # ErrorCode
    "ffffffff"               # GenerationId -1
    "00"                     # ProtocolType null
    "0a73657373696f6e6564"   # ProtocolName "sessioned"
    "026d"                   # Leader "m"
    "00"                     # SkipAssignment false
    "026d"                   # MemberId "m"
    "01"                     # Members: []
    "00"                     # tagged fields
)
# JoinGroup v0 whose GroupId length is -2: the body starts at offset 10.
BAD_HEX = "000b0000" "00000005" "0000" "fffe"


def prefixed(hex_frame: str) -> str:
    return f"{len(hex_frame) // 2:08x}" + hex_frame


def run(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fakebroker.cli", *args], input=stdin,
                          capture_output=True, text=True, cwd=ROOT, timeout=120)


def ok_json(proc: subprocess.CompletedProcess[str]) -> dict[str, object]:
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    doc = json.loads(proc.stdout)
    assert isinstance(doc, dict)
    return doc


def one_line_error(proc: subprocess.CompletedProcess[str], status: int) -> str:
    assert proc.returncode == status, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


# ------------------------------------------------------------ decode
def test_decode_request_from_argument() -> None:
    doc = ok_json(run("decode", REQUEST_HEX))
    assert doc == {
        "kind": "request", "api": "JoinGroup", "apiKey": 11, "version": 9, "sizePrefix": False,
        "header": {"RequestApiKey": 11, "RequestApiVersion": 9, "CorrelationId": 7, "ClientId": "c"},
        "body": REQUEST_BODY,
        # Protocol type connect, but 0x0102 is no Connect metadata: said, and the frame still decodes.
        "embedded": {"Protocols[0].Metadata": {
            "spec": "ConnectProtocolMetadata",
            "error": "ConnectProtocolMetadata.<version> at offset 0: unsupported-version: version 258 is "
                     "outside 0-2"}},
    }


def test_decode_request_from_stdin_with_whitespace() -> None:
    spaced = " ".join(REQUEST_HEX[i:i + 8] for i in range(0, len(REQUEST_HEX), 8))
    text = "\n".join(spaced[i:i + 30] for i in range(0, len(spaced), 30)).upper() + "\n"
    doc = ok_json(run("decode", stdin=text))
    assert (doc["sizePrefix"], doc["body"]) == (False, REQUEST_BODY)


def test_decode_request_whitespace_in_argument() -> None:
    doc = ok_json(run("decode", REQUEST_HEX[:10] + " \t" + REQUEST_HEX[10:]))
    assert doc["body"] == REQUEST_BODY


@pytest.mark.parametrize("via_stdin", [False, True])
def test_decode_request_with_size_prefix(via_stdin: bool) -> None:
    frame = prefixed(REQUEST_HEX)
    doc = ok_json(run("decode", stdin=frame) if via_stdin else run("decode", frame))
    assert (doc["sizePrefix"], doc["version"], doc["body"]) == (True, 9, REQUEST_BODY)


def test_decode_size_prefix_can_be_forced() -> None:
    doc = ok_json(run("decode", "--size-prefix", "yes", prefixed(REQUEST_HEX)))
    assert doc["sizePrefix"] is True
    line = one_line_error(run("decode", "--size-prefix", "yes", REQUEST_HEX), 1)
    assert "<size>" in line and "offset 0" in line


@pytest.mark.parametrize("api", ["JoinGroup", "11", "joingroup"])
def test_decode_response(api: str) -> None:
    doc = ok_json(run("decode", "--response", "--api", api, "--version", "9", RESPONSE_HEX))
    assert doc == {
        "kind": "response", "api": "JoinGroup", "apiKey": 11, "version": 9, "sizePrefix": False,
        "header": {"CorrelationId": 7},
        "body": {"ThrottleTimeMs": 0, "ErrorCode": 0, "GenerationId": -1, "ProtocolType": None,
                 "ProtocolName": "sessioned", "Leader": "m", "SkipAssignment": False,
                 "MemberId": "m", "Members": []},
    }


def test_decode_response_with_size_prefix() -> None:
    doc = ok_json(run("decode", "--response", "--api", "11", "--version", "9", prefixed(RESPONSE_HEX)))
    assert doc["sizePrefix"] is True


# ------------------------------------------------------------ Connect's embedded bytes
# What Kafka Connect itself writes as a v0 worker's metadata (url leaderUrl:8083, config
# offset 1; schemas/connect/README.md, tests/test_connect_vectors.py).
CONNECT_V0_METADATA = "0000000e6c656164657255726c3a383038330000000000000001"


def connect_join_hex(*protocols: tuple[str, str]) -> str:
    """A JoinGroup v9 request of protocol type connect, assembled like REQUEST_HEX."""
    body = "".join(f"{len(n) + 1:02x}{n.encode().hex()}{len(m) // 2 + 1:02x}{m}00" for n, m in protocols)
    return ("000b0009" "00000007" "000163" "00" "0267" "00002710" "0000ea60" "01" "00" "08636f6e6e656374"
            f"{len(protocols) + 1:02x}{body}" "00" "00")


def test_decode_shows_connect_metadata_decoded_beside_the_hex() -> None:
    frame = connect_join_hex(("default", CONNECT_V0_METADATA))
    doc = ok_json(run("decode", frame))
    assert doc["body"]["Protocols"] == [{"Name": "default", "Metadata": CONNECT_V0_METADATA}]
    assert doc["embedded"] == {"Protocols[0].Metadata": {
        "spec": "ConnectProtocolMetadata", "version": 0,
        "value": {"Url": "leaderUrl:8083", "ConfigOffset": 1, "Allocation": None}}}
    encoded = run("encode", stdin=json.dumps(doc))  # embedded is a view: encode ignores it
    assert encoded.returncode == 0 and encoded.stdout == frame + "\n"


def test_decode_shows_a_metadata_allocation_and_a_sync_assignment() -> None:
    from fakebroker.connect.embedded import assignment_bytes, metadata_bytes
    owned = [("conn-a", -1), ("conn-a", 0)]
    meta = metadata_bytes(2, "http://w1:8083/", 7, owned=owned, leader="w1-1").hex()
    allocation = assignment_bytes(2, leader="w1-1", config_offset=7, assigned=owned).hex()
    doc = ok_json(run("decode", connect_join_hex(("sessioned", meta))))
    inner = doc["embedded"]["Protocols[0].Metadata"]
    assert (inner["version"], inner["value"]["Url"], inner["value"]["Allocation"]) == (2, "http://w1:8083/", allocation)
    assert inner["allocation"]["spec"] == "ConnectProtocolAssignment"
    assert inner["allocation"]["value"]["Assignment"] == [{"Connector": "conn-a", "Tasks": [-1, 0]}]
    # A SyncGroup v5 response naming the sessioned protocol: its assignment, revocations too.
    asg = assignment_bytes(2, leader="w1-1", assigned=[("conn-a", 0)], revoked=[("conn-b", 1)], delay_ms=5000).hex()
    response = ("00000004" "00" "00000000" "0000" "08636f6e6e656374" "0a73657373696f6e6564"
                f"{len(asg) // 2 + 1:02x}{asg}" "00")
    doc = ok_json(run("decode", "--response", "--api", "SyncGroup", "--version", "5", response))
    value = doc["embedded"]["Assignment"]["value"]
    assert (value["Leader"], value["Revoked"], value["ScheduledDelay"]) == (
        "w1-1", [{"Connector": "conn-b", "Tasks": [1]}], 5000)


def test_decode_leaves_other_protocol_types_alone() -> None:
    frame = connect_join_hex(("default", CONNECT_V0_METADATA)).replace("08636f6e6e656374", "09636f6e73756d6572", 1)
    doc = ok_json(run("decode", frame))
    assert doc["body"]["ProtocolType"] == "consumer" and "embedded" not in doc


# ------------------------------------------------------------ decode | encode
@pytest.mark.parametrize("frame", [REQUEST_HEX, prefixed(REQUEST_HEX)], ids=["bare", "prefixed"])
def test_decode_then_encode_request_gives_the_same_hex(frame: str) -> None:
    decoded = run("decode", frame)
    assert decoded.returncode == 0, decoded.stderr
    encoded = run("encode", stdin=decoded.stdout)
    assert encoded.returncode == 0, encoded.stderr
    assert encoded.stdout == frame + "\n"


@pytest.mark.parametrize("frame", [RESPONSE_HEX, prefixed(RESPONSE_HEX)], ids=["bare", "prefixed"])
def test_decode_then_encode_response_gives_the_same_hex(frame: str, tmp_path: Path) -> None:
    decoded = run("decode", "--response", "--api", "JoinGroup", "--version", "9", frame)
    assert decoded.returncode == 0, decoded.stderr
    path = tmp_path / "frame.json"
    path.write_text(decoded.stdout, encoding="utf-8")
    encoded = run("encode", str(path))  # the file argument, this time
    assert encoded.returncode == 0, encoded.stderr
    assert encoded.stdout.strip() == frame


def test_encode_size_prefix_option_overrides_the_json() -> None:
    decoded = run("decode", REQUEST_HEX)
    assert run("encode", "--size-prefix", "yes", stdin=decoded.stdout).stdout.strip() == prefixed(REQUEST_HEX)
    decoded = run("decode", prefixed(REQUEST_HEX))
    assert run("encode", "--size-prefix", "no", stdin=decoded.stdout).stdout.strip() == REQUEST_HEX


# ------------------------------------------------------------ malformed input: exit 1
def test_malformed_request_is_one_line_with_path_offset_rule() -> None:
    line = one_line_error(run("decode", BAD_HEX), 1)
    assert "JoinGroupRequest.GroupId" in line
    assert "offset 10" in line
    assert "negative-length" in line


def test_malformed_offset_counts_the_size_prefix() -> None:
    line = one_line_error(run("decode", stdin=prefixed(BAD_HEX)), 1)
    assert "JoinGroupRequest.GroupId" in line and "offset 14" in line and "negative-length" in line


def test_malformed_nested_field_in_a_response() -> None:
    # Members: 1 element with MemberId "m" and GroupInstanceId null; the frame ends before Metadata.
    bad = RESPONSE_HEX[:-4] + "02" + "026d" + "00"
    line = one_line_error(run("decode", "--response", "--api", "JoinGroup", "--version", "9", bad), 1)
    assert "JoinGroupResponse.Members[0].Metadata" in line
    assert f"offset {len(bad) // 2}" in line and "truncated" in line


@pytest.mark.parametrize("text, words", [
    ("zz", ["not hex"]),
    ("abc", ["not hex"]),
    ("", ["RequestApiKey", "offset 0", "truncated"]),
    (REQUEST_HEX + "00", ["JoinGroupRequest", f"offset {len(REQUEST_HEX) // 2}", "trailing-bytes"]),
    ("03e7000000000001ffff", ["RequestHeader.RequestApiKey", "offset 0", "unknown-api-key"]),
    ("000b000a00000001ffff", ["JoinGroupRequest", "offset 10", "unsupported-version"]),
])
def test_malformed_inputs(text: str, words: list[str]) -> None:
    line = one_line_error(run("decode", stdin=text), 1)
    assert line.startswith("error: ")
    for word in words:
        assert word in line


# ------------------------------------------------------------ usage errors: exit 2
@pytest.mark.parametrize("args", [
    ["decode", "--response", RESPONSE_HEX],                          # no --api / --version
    ["decode", "--response", "--version", "9", RESPONSE_HEX],        # no --api
    ["decode", "--response", "--api", "JoinGroup", RESPONSE_HEX],    # no --version
    ["decode", "--bogus", REQUEST_HEX],                              # unknown option
    ["decode", "--response", "--api", "NoSuchApi", "--version", "0", RESPONSE_HEX],
    ["decode", "--response", "--api", "999", "--version", "0", RESPONSE_HEX],
    ["decode", "--size-prefix", "maybe", REQUEST_HEX],
    ["decode", "--version", "nine", REQUEST_HEX],
    ["frobnicate"],
    [],
])
def test_usage_errors_exit_2(args: list[str]) -> None:
    proc = run(*args)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stdout == ""
    assert proc.stderr.strip()


def test_unknown_api_is_named() -> None:
    proc = run("decode", "--response", "--api", "NoSuchApi", "--version", "0", RESPONSE_HEX)
    assert proc.returncode == 2
    assert "NoSuchApi" in proc.stderr
    proc = run("decode", "--response", "--api", "999", "--version", "0", RESPONSE_HEX)
    assert proc.returncode == 2
    assert "API key 999" in proc.stderr


# ------------------------------------------------------------ encode errors: exit 1
def request_doc(**body: object) -> str:
    return json.dumps({"kind": "request", "api": "JoinGroup", "version": 9,
                       "header": {"CorrelationId": 7, "ClientId": "c"},
                       "body": {**REQUEST_BODY, **body}})


@pytest.mark.parametrize("doc, words", [
    (request_doc(Bogus=1), ["body.Bogus", "no field"]),
    (request_doc(SessionTimeoutMs="slow"), ["body.SessionTimeoutMs", "integer"]),
    (request_doc(SessionTimeoutMs=2**31), ["body.SessionTimeoutMs", "out of range"]),
    (request_doc(Protocols=[{"Name": "a", "Metadata": "xyz"}]), ["body.Protocols[0].Metadata", "hex"]),
    (request_doc(Protocols=[{"Name": "a", "Bogus": "00"}]), ["body.Protocols[0].Bogus"]),
    (request_doc(GroupId=None), ["JoinGroupRequest.GroupId", "null-not-nullable"]),
    (request_doc(Protocols=[{"Name": None}]), ["JoinGroupRequest.Protocols[0].Name", "null-not-nullable"]),
    ("{not json", ["invalid JSON", "line 1"]),
    ('{"kind": "request"}', ["version"]),
    ('{"kind": "request", "apiKey": 999, "version": 0, "body": {}}', ["API key 999"]),
])
def test_encode_invalid_input_names_the_field(doc: str, words: list[str]) -> None:
    line = one_line_error(run("encode", stdin=doc), 1)
    for word in words:
        assert word in line


def test_encode_field_absent_at_the_version() -> None:
    doc = json.dumps({"kind": "request", "api": "JoinGroup", "version": 0, "header": {},
                      "body": {"GroupId": "g", "GroupInstanceId": "static"}})
    line = one_line_error(run("encode", stdin=doc), 1)
    assert "JoinGroupRequest.GroupInstanceId" in line and "field-not-in-version" in line


def test_encode_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    proc = run("encode", str(tmp_path / "missing.json"))
    assert proc.returncode == 2 and "missing.json" in proc.stderr


# ------------------------------------------------------------ --version, --help
def test_version() -> None:
    proc = run("--version")
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"fakebroker (connect-conformance) {fakebroker.__version__}"


def test_console_script() -> None:
    script = Path(sys.executable).parent / "fakebroker"
    if not script.exists():
        pytest.skip("the fakebroker console script is not installed in this environment")
    proc = subprocess.run([str(script), "decode", REQUEST_HEX], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["body"] == REQUEST_BODY


def test_help_lists_the_codec_commands() -> None:
    proc = run("--help")
    assert proc.returncode == 0
    for word in ("decode", "encode", "--version", "--help"):
        assert word in proc.stdout


def _options(command: str) -> list[str]:
    """Every option string the sub-command's parser accepts, read from the parser itself."""
    from fakebroker.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return [s for a in sub.choices[command]._actions for s in a.option_strings]  # type: ignore[union-attr]


@pytest.mark.parametrize("command, expected", [
    ("decode", ["--response", "--api", "--version", "--size-prefix", "--schemas", "hex"]),
    ("encode", ["--size-prefix", "--schemas", "file"]),
])
def test_subcommand_help_mentions_every_option(command: str, expected: list[str]) -> None:
    proc = run(command, "--help")
    assert proc.returncode == 0, proc.stderr
    options = _options(command)
    assert set(expected) - {"hex", "file"} <= set(options)
    for word in {*options, *expected}:
        assert word in proc.stdout, f"{command} --help does not mention {word}"
    for choice in ("auto", "yes", "no"):
        assert choice in proc.stdout
