"""A user can add a spec file for a new API without writing code.

A new request/response pair in Kafka's JSON message-spec format (flexible, with tagged
fields and nested struct arrays) is dropped into a directory and loaded next to the
bundled specs, through the library and through the CLI's ``--schemas DIR``. A broken spec
file is refused with the file, the field path and the rule named.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fakebroker.protocol import (
    DecodeError, Registry, SpecError, Struct, default_registry, default_schema_dir,
)
from fakebroker.protocol.framing import decode_request, decode_response, encode_request, encode_response

ROOT = Path(__file__).resolve().parents[1]
API_KEY = 4242

# Kafka's format, // comments included (Kafka's own files carry a license header).
REQUEST_SPEC = """\
// A made-up API, for the test that new APIs need no code.
{
  "apiKey": 4242,
  "type": "request",
  "listeners": ["broker"],
  "name": "WidgetSyncRequest",
  // Version 1 adds the Priority tagged field.
  "validVersions": "0-1",
  "flexibleVersions": "0+",
  "fields": [
    { "name": "GroupId", "type": "string", "versions": "0+", "entityType": "groupId",
      "about": "The group." },
    { "name": "Widgets", "type": "[]Widget", "versions": "0+", "about": "The widgets.",
      "fields": [
        { "name": "Name", "type": "string", "versions": "0+", "mapKey": true, "about": "Widget name." },
        { "name": "Sizes", "type": "[]int32", "versions": "0+", "about": "Sizes." },
        { "name": "Parts", "type": "[]Part", "versions": "0+", "about": "Parts.",
          "fields": [
            { "name": "PartId", "type": "int16", "versions": "0+", "about": "Part id." },
            { "name": "Blob", "type": "bytes", "versions": "0+", "nullableVersions": "0+",
              "about": "Opaque part data, or null." }
          ]}
      ]},
    { "name": "Blobs", "type": "[]bytes", "versions": "0+", "about": "Opaque blobs." },
    { "name": "Note", "type": "string", "versions": "0+", "nullableVersions": "0+", "default": "null",
      "taggedVersions": "0+", "tag": 0, "about": "A note, or null." },
    { "name": "Priority", "type": "int32", "versions": "1+", "default": "7",
      "taggedVersions": "1+", "tag": 1, "about": "Priority." }
  ]
}
"""

RESPONSE_SPEC = """\
{
  "apiKey": 4242,
  "type": "response",
  "name": "WidgetSyncResponse",
  "validVersions": "0-1",
  "flexibleVersions": "0+",
  "fields": [
    { "name": "ErrorCode", "type": "int16", "versions": "0+", "about": "Error code." },
    { "name": "Accepted", "type": "[]AcceptedWidget", "versions": "0+", "about": "Accepted widgets.",
      "fields": [
        { "name": "Name", "type": "string", "versions": "0+", "about": "Widget name." },
        { "name": "Epoch", "type": "int64", "versions": "0+", "default": "-1", "about": "Epoch." }
      ]},
    { "name": "RetryAfterMs", "type": "int32", "versions": "0+", "default": "0",
      "taggedVersions": "0+", "tag": 0, "about": "Back-off hint." }
  ]
}
"""

# Tagged in version 0, but only versions 1+ are flexible: tagged fields need flexible versions.
BROKEN_SPEC = """\
{
  "apiKey": 4243,
  "type": "request",
  "name": "BrokenThingRequest",
  "validVersions": "0-1",
  "flexibleVersions": "1+",
  "fields": [
    { "name": "GroupId", "type": "string", "versions": "0+", "about": "The group." },
    { "name": "Items", "type": "[]Item", "versions": "0+", "about": "Items.", "fields": [
      { "name": "Hint", "type": "int32", "versions": "0+", "taggedVersions": "0+", "tag": 0,
        "about": "A tag in non-flexible version 0." }
    ]}
  ]
}
"""


@pytest.fixture
def spec_dir(tmp_path: Path) -> Path:
    d = tmp_path / "specs"
    d.mkdir()
    (d / "WidgetSyncRequest.json").write_text(REQUEST_SPEC, encoding="utf-8")
    (d / "WidgetSyncResponse.json").write_text(RESPONSE_SPEC, encoding="utf-8")
    return d


@pytest.fixture
def registry(spec_dir: Path) -> Registry:
    return Registry.load(default_schema_dir(), spec_dir)


def widget_request(registry: Registry) -> Struct:
    mt = registry["WidgetSyncRequest"]
    widget, part = mt.cls.Widget, mt.cls.Part  # type: ignore[attr-defined]
    return mt.new(
        group_id="g",
        widgets=[
            widget(name="w1", sizes=[1, -2], parts=[part(part_id=3, blob=b"\x00\xff"), part(part_id=4, blob=None)]),
            widget(name="w2"),
        ],
        blobs=[b"", b"\x01\x02\x03"],
        note="hi",
        priority=9,
    )


def test_the_new_api_is_not_bundled() -> None:
    assert API_KEY not in default_registry().requests


def test_registry_loads_the_new_api(registry: Registry) -> None:
    req, resp = registry.request(API_KEY), registry.response(API_KEY)
    assert (req.name, resp.name) == ("WidgetSyncRequest", "WidgetSyncResponse")
    assert registry.by_api_name("widgetsync") == API_KEY
    assert "JoinGroupRequest" in registry  # the bundled specs are still there


def test_request_body_bytes(registry: Registry) -> None:
    mt = registry["WidgetSyncRequest"]
    widget = mt.cls.Widget  # type: ignore[attr-defined]
    msg = mt.new(group_id="g", widgets=[widget(name="w", sizes=[5])], blobs=[b"\xab"], note="n", priority=9)
    expected = (
        b"\x02g"                   # GroupId "g"
        b"\x02"                    # Widgets: 1
        b"\x02w"                   #   [0].Name "w"
        b"\x02\x00\x00\x00\x05"    #   [0].Sizes: [5]
        b"\x01"                    #   [0].Parts: []
        b"\x00"                    #   [0]: no tagged fields
        b"\x02"                    # Blobs: 1
        b"\x02\xab"                #   [0]: compact bytes 0xab
        b"\x02"                    # two tagged fields
        b"\x00\x02\x02n"           #   tag 0 (Note): 2 bytes, compact string "n"
        b"\x01\x04\x00\x00\x00\x09"  # tag 1 (Priority): 4 bytes, 9
    )
    assert mt.encode(msg, 1) == expected
    assert mt.decode(expected, 1) == msg
    # Version 0 has no Priority; its default is not written, the note still is.
    assert mt.encode(mt.new(group_id="g", note="n"), 0) == b"\x02g\x01\x01\x01\x00\x02\x02n"


def test_request_frame_round_trip(registry: Registry) -> None:
    msg = widget_request(registry)
    frame = encode_request(registry, msg, 1, 77, "client")
    req = decode_request(registry, frame)
    assert (req.api_key, req.version, req.correlation_id, req.header_version) == (API_KEY, 1, 77, 2)
    assert req.body == msg
    assert encode_request(registry, req.body, 1, 77, "client") == frame


def test_response_frame_round_trip(registry: Registry) -> None:
    mt = registry["WidgetSyncResponse"]
    accepted = mt.cls.AcceptedWidget  # type: ignore[attr-defined]
    msg = mt.new(error_code=0, accepted=[accepted(name="w1", epoch=3), accepted(name="w2")], retry_after_ms=250)
    frame = encode_response(registry, msg, 1, 77)
    resp = decode_response(registry, frame, API_KEY, 1)
    assert (resp.correlation_id, resp.header_version, resp.body) == (77, 1, msg)


def test_strict_decoding_applies_to_the_new_api(registry: Registry) -> None:
    mt = registry["WidgetSyncRequest"]
    data = (
        b"\x02g"                   # 0-1 GroupId
        b"\x02"                    # 2   Widgets: 1
        b"\x02w"                   # 3-4 [0].Name
        b"\x01"                    # 5   [0].Sizes: []
        b"\x02"                    # 6   [0].Parts: 1
        b"\x00\x03"                # 7-8 [0].Parts[0].PartId
        b"\x05\x00"                # 9-10 [0].Parts[0].Blob: 4 bytes promised, 1 present
    )
    with pytest.raises(DecodeError) as info:
        mt.decode(data, 0)
    e = info.value
    assert (e.rule, e.path, e.offset) == ("length-past-end", "WidgetSyncRequest.Widgets[0].Parts[0].Blob", 10)


def run_cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fakebroker.cli", *args], input=stdin,
                          capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_cli_decodes_and_encodes_the_new_api(registry: Registry, spec_dir: Path) -> None:
    schemas = ["--schemas", str(spec_dir)]  # added to the bundled specs
    frame = encode_request(registry, widget_request(registry), 1, 5, "c").hex()
    out = run_cli("decode", *schemas, frame)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert (doc["api"], doc["apiKey"], doc["version"]) == ("WidgetSync", API_KEY, 1)
    assert doc["body"]["Widgets"][0]["Parts"][0] == {"PartId": 3, "Blob": "00ff"}
    assert doc["body"]["Blobs"] == ["", "010203"]
    assert (doc["body"]["Note"], doc["body"]["Priority"]) == ("hi", 9)
    back = run_cli("encode", *schemas, stdin=out.stdout)
    assert back.returncode == 0, back.stderr
    assert back.stdout.strip() == frame

    resp_mt = registry["WidgetSyncResponse"]
    resp = encode_response(registry, resp_mt.new(retry_after_ms=5), 1, 5).hex()
    out = run_cli("decode", *schemas, "--response", "--api", "WidgetSync", "--version", "1", resp)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["body"] == {"ErrorCode": 0, "Accepted": [], "RetryAfterMs": 5}


def test_cli_without_the_spec_dir_does_not_know_the_api(registry: Registry) -> None:
    frame = encode_request(registry, widget_request(registry), 1, 5, "c").hex()
    out = run_cli("decode", frame)
    assert out.returncode == 1
    assert "unknown-api-key" in out.stderr


@pytest.fixture
def broken_dir(tmp_path: Path) -> Path:
    d = tmp_path / "broken"
    d.mkdir()
    (d / "BrokenThingRequest.json").write_text(BROKEN_SPEC, encoding="utf-8")
    return d


def test_broken_spec_names_file_field_and_rule(broken_dir: Path) -> None:
    with pytest.raises(SpecError) as info:
        Registry.load(default_schema_dir(), broken_dir)
    e = info.value
    assert Path(e.file) == broken_dir / "BrokenThingRequest.json"
    assert e.path == "BrokenThingRequest.Items.Hint"
    assert e.rule == "tagged-versions-flexible"
    assert all(part in str(e) for part in (e.file, e.path, e.rule))


def test_cli_refuses_a_broken_spec(broken_dir: Path) -> None:
    out = run_cli("decode", "--schemas", str(broken_dir), "000b0000000000010000")
    assert out.returncode == 2
    assert out.stdout == ""
    err = out.stderr.strip()
    assert len(err.splitlines()) == 1, err
    for part in (str(broken_dir / "BrokenThingRequest.json"), "BrokenThingRequest.Items.Hint",
                 "tagged-versions-flexible"):
        assert part in err
