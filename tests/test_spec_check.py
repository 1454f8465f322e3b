"""Tests for fakebroker.protocol.spec_check, the strict message-spec checker.

Each file in tests/data/broken_specs/ is the valid spec below with one defect; its name is
the rule id it must trip, and EXPECTED_PATHS gives the path the error must name.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakebroker.protocol.errors import SpecError
from fakebroker.protocol.spec import read_spec_file
from fakebroker.protocol.spec_check import (
    MAX_VERSION,
    RULE_IDS,
    SCHEMA_PATH,
    VersionRange,
    check_spec,
    iter_spec_errors,
    load_schema,
)

REPO = Path(__file__).resolve().parents[1]
BROKEN = Path(__file__).resolve().parent / "data" / "broken_specs"

VALID: dict[str, Any] = {
    "apiKey": 1000,
    "type": "request",
    "listeners": ["broker"],
    "name": "TestRequest",
    "validVersions": "0-3",
    "flexibleVersions": "2+",
    "fields": [
        {"name": "GroupId", "type": "string", "versions": "0+", "entityType": "groupId",
         "about": "The group id."},
        {"name": "Topics", "type": "[]TestTopic", "versions": "0+", "about": "The topics.",
         "fields": [
             {"name": "Name", "type": "string", "versions": "0+", "mapKey": True,
              "entityType": "topicName", "about": "The topic name."},
             {"name": "Partitions", "type": "[]int32", "versions": "0+",
              "about": "The partitions."},
         ]},
    ],
}

EXPECTED_PATHS: dict[str, str] = {
    "array-of-array": "TestRequest.Topics.Replicas",
    "bad-default": "TestRequest.Topics.Priority",
    "bad-entity-type": "TestRequest.Topics.TopicId",
    "bad-field-type": "TestRequest.TimeoutMs",
    "bad-listener": "TestRequest",
    "bad-message-type": "TestRequest",
    "bad-name": "TestRequest.Timeout_Ms",
    "bad-version-string": "TestRequest.TimeoutMs",
    "common-struct-redefined": "TestRequest.Owners",
    "common-struct-versions": "TestRequest.Owners",
    "coordinator-key-versions": "TestKey",
    "duplicate-field-name": "TestRequest.Topics.Name",
    "duplicate-tag": "TestRequest.Topics.Owner",
    "entity-type-mismatch": "TestRequest.LeaderId",
    "field-flexible-versions-subset": "TestRequest.ClientTag",
    "field-flexible-versions-type": "TestRequest.TimeoutMs",
    "fields-on-non-struct": "TestRequest.TimeoutMs",
    "flexible-versions-open-ended": "TestRequest",
    "map-key-outside-array": "TestRequest.Key",
    "missing-key": "TestRequest.TimeoutMs",
    "null-default-not-nullable": "TestRequest.Reason",
    "nullable-type": "TestRequest.Topics.TopicId",
    "nullable-versions-outside-field": "TestRequest.Reason",
    "out-of-range": "TestRequest.TimeoutMs",
    "request-only-key": "TestResponse",
    "struct-defined-twice": "TestRequest.MoreTopics",
    "struct-recursion": "TestRequest.commonStructs[Node].Children",
    "struct-unresolved": "TestRequest.Owners",
    "tag-without-tagged-versions": "TestRequest.TimeoutMs",
    "tagged-map-key": "TestRequest.Topics.Alias",
    "tagged-nullable-mixed": "TestRequest.Reason",
    "tagged-records": "TestRequest.Records",
    "tagged-versions-flexible": "TestRequest.TimeoutMs",
    "tagged-versions-open-ended": "TestRequest.TimeoutMs",
    "tagged-versions-subset": "TestRequest.TimeoutMs",
    "tagged-versions-without-tag": "TestRequest.TimeoutMs",
    "tags-not-contiguous": "TestRequest.Topics",
    "unknown-key": "TestRequest.TimeoutMs",
    "valid-versions-closed": "TestRequest",
    "version-range-inverted": "TestRequest.Topics.Epoch",
    "versions-outside-parent": "TestRequest.Topics.Epoch",
    "wrong-json-type": "TestRequest.TimeoutMs",
    "zero-copy-type": "TestRequest.Payload",
}


def fld(name: str, type_: str, versions: str = "0+", **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": type_, "versions": versions, **extra}


def mutated(change: Callable[[dict[str, Any]], object]) -> dict[str, Any]:
    doc = copy.deepcopy(VALID)
    change(doc)
    return doc


def errors(doc: Any) -> list[tuple[str, str]]:
    return [(e.rule, e.path) for e in iter_spec_errors(doc, "test.json")]


def assert_single(doc: Any, rule: str, path: str) -> SpecError:
    """check_spec raises exactly this error, and it is the only one found."""
    with pytest.raises(SpecError) as info:
        check_spec(doc, "test.json")
    assert (info.value.rule, info.value.path) == (rule, path), str(info.value)
    assert errors(doc) == [(rule, path)]
    return info.value


# ---------------------------------------------------------------------------
# the valid spec and the broken fixtures


def test_valid_spec_passes() -> None:
    assert errors(VALID) == []
    check_spec(copy.deepcopy(VALID), "valid.json")


def test_fixtures_cover_every_rule() -> None:
    assert {p.stem for p in BROKEN.glob("*.json")} == set(RULE_IDS) == set(EXPECTED_PATHS)


@pytest.mark.parametrize("fixture", sorted(BROKEN.glob("*.json")), ids=lambda p: p.stem)
def test_broken_spec(fixture: Path) -> None:
    doc = json.loads(fixture.read_text(encoding="utf-8"))
    err = assert_single(doc, fixture.stem, EXPECTED_PATHS[fixture.stem])
    assert err.file == "test.json"
    assert err.message


def test_schema_rule_ids_are_catalogued() -> None:
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "x-rule" in node:
                found.add(node["x-rule"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(load_schema())
    assert found and found <= set(RULE_IDS)
    assert SCHEMA_PATH == REPO / "schemas" / "message-spec.schema.json"


# ---------------------------------------------------------------------------
# the error object and path form


def test_error_string_and_attributes() -> None:
    doc = mutated(lambda d: d["fields"].append(fld("Bad", "int32", "1++")))
    with pytest.raises(SpecError) as info:
        check_spec(doc, "specs/Test.json")
    err = info.value
    assert isinstance(err, ValueError)
    assert (err.file, err.path, err.rule) == ("specs/Test.json", "TestRequest.Bad", "bad-version-string")
    assert str(err) == f"specs/Test.json: TestRequest.Bad: bad-version-string: {err.message}"
    assert err.message.startswith("versions: '1++'")


@pytest.mark.parametrize(
    ("change", "rule", "path"),
    [
        (lambda d: d.pop("name"), "missing-key", "<message>"),
        (lambda d: d["fields"].append({"type": "int32", "versions": "0+"}), "missing-key",
         "TestRequest.fields[2]"),
        (lambda d: d["fields"][1]["fields"].append(fld(5, "int32")),  # type: ignore[arg-type]
         "wrong-json-type", "TestRequest.Topics.fields[2]"),
        (lambda d: d.update(commonStructs=[{"name": "Owner", "versions": "0+",
                                            "fields": [fld("Id", "int32", "0++")]}]),
         "bad-version-string", "TestRequest.commonStructs[Owner].Id"),
        (lambda d: d.update(commonStructs=[{"name": "Owner", "versions": "0+", "fields": [],
                                            "extra": 1}]),
         "unknown-key", "TestRequest.commonStructs[Owner]"),
    ],
)
def test_error_paths(change: Callable[[dict[str, Any]], object], rule: str, path: str) -> None:
    assert_single(mutated(change), rule, path)


def test_non_object_document() -> None:
    assert errors([]) == [("wrong-json-type", "<message>")]


def test_all_schema_errors_reported_in_document_order() -> None:
    doc = mutated(lambda d: d.update(apiKey="x", zzz=1, type="record"))
    assert [rule for rule, _ in errors(doc)] == ["unknown-key", "wrong-json-type", "bad-message-type"]


def test_schema_errors_stop_semantic_rules() -> None:
    # The open-ended validVersions is not reported while the document is structurally broken.
    doc = mutated(lambda d: d.update(validVersions="0+", bogus=True))
    assert errors(doc) == [("unknown-key", "TestRequest")]


def test_check_spec_raises_the_first_error() -> None:
    doc = mutated(_top(fld("A", "int32", "5+"), fld("B", "uuid", nullableVersions="0+")))
    assert errors(doc) == [("versions-outside-parent", "TestRequest.A"), ("nullable-type", "TestRequest.B")]
    with pytest.raises(SpecError, match="versions-outside-parent"):
        check_spec(doc, "test.json")


# ---------------------------------------------------------------------------
# more cases per rule: what must fail and what Kafka's own specs rely on passing


def _common(*structs: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    def change(d: dict[str, Any]) -> None:
        d["commonStructs"] = list(structs)
    return change


def _both(*changes: Callable[[dict[str, Any]], object]) -> Callable[[dict[str, Any]], None]:
    def change(d: dict[str, Any]) -> None:
        for c in changes:
            c(d)
    return change


def _top(*fields: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    return lambda d: d["fields"].extend(fields)


def _topic(*fields: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    return lambda d: d["fields"][1]["fields"].extend(fields)


OWNER = {"name": "Owner", "versions": "0+", "fields": [fld("Id", "int32", mapKey=True)]}

FAILING: list[tuple[str, Callable[[dict[str, Any]], object], str, str]] = [
    ("version above int16", lambda d: d.update(validVersions="0-40000"), "bad-version-string", "TestRequest"),
    ("leading zero", _top(fld("A", "int32", "01+")), "bad-version-string", "TestRequest.A"),
    ("apiKey above int16", lambda d: d.update(apiKey=40000), "out-of-range", "TestRequest"),
    ("apiKey missing", lambda d: d.pop("apiKey"), "missing-key", "TestRequest"),
    ("flexibleVersions missing", lambda d: d.pop("flexibleVersions"), "missing-key", "TestRequest"),
    ("coordinator-value without apiKey",
     lambda d: (d.pop("apiKey"), d.pop("listeners"), d.update(type="coordinator-value", name="V")),
     "missing-key", "V"),
    ("unknown top-level key", lambda d: d.update(headerVersions={}), "unknown-key", "TestRequest"),
    ("flag not boolean", _top(fld("A", "int32", ignorable="yes")), "wrong-json-type", "TestRequest.A"),
    ("duplicate listener", lambda d: d.update(listeners=["broker", "broker"]), "bad-listener", "TestRequest"),
    ("unstable response",
     lambda d: (d.pop("listeners"), d.update(type="response", latestVersionUnstable=True)),
     "request-only-key", "TestRequest"),
    ("mapKey in a single struct", _top(fld("Owner", "Owner", fields=[fld("Id", "int32", mapKey=True)])),
     "map-key-outside-array", "TestRequest.Owner.Id"),
    ("mapKey in a common struct used singly", _both(_common(OWNER), _top(fld("Owner", "Owner"))),
     "map-key-outside-array", "TestRequest.commonStructs[Owner].Id"),
    ("recursion through an inline struct",
     _both(_common({"name": "Node", "versions": "0+",
                    "fields": [fld("Kids", "[]Kid", fields=[fld("Node", "Node")])]}),
           _top(fld("Tree", "Node"))),
     "struct-recursion", "TestRequest.commonStructs[Node].Kids.Node"),
    ("mutual recursion",
     _both(_common({"name": "A", "versions": "0+", "fields": [fld("B", "B")]},
                   {"name": "B", "versions": "0+", "fields": [fld("A", "A")]}),
           _top(fld("Tree", "A"))),
     "struct-recursion", "TestRequest.commonStructs[B].A"),
    ("common struct defined twice",
     _common({"name": "A", "versions": "0+", "fields": []}, {"name": "A", "versions": "0+", "fields": []}),
     "struct-defined-twice", "TestRequest.commonStructs[A]"),
    ("inline struct referenced by another field", _top(fld("Again", "TestTopic")),
     "struct-defined-twice", "TestRequest.Again"),
    ("struct named like the message", _top(fld("Again2", "[]TestRequest", fields=[])),
     "struct-defined-twice", "TestRequest.Again2"),
    ("closed range past validVersions", _top(fld("A", "int32", "0-5")),
     "versions-outside-parent", "TestRequest.A"),
    ("nested field ends before its parent",
     _both(lambda d: d["fields"][1].update(versions="1+"), _topic(fld("Old", "int32", "0"))),
     "versions-outside-parent", "TestRequest.Topics.Old"),
    ("common struct field past validVersions",
     _both(_common({"name": "A", "versions": "0+", "fields": [fld("X", "int32", "0-7")]}),
           _top(fld("S", "A"))),
     "versions-outside-parent", "TestRequest.commonStructs[A].X"),
    ("nullable disjoint", _top(fld("A", "string", "2+", nullableVersions="0-1")),
     "nullable-versions-outside-field", "TestRequest.A"),
    ("nullable bool", _top(fld("A", "bool", nullableVersions="0+")), "nullable-type", "TestRequest.A"),
    ("tagged without flexible versions",
     _both(lambda d: d.update(flexibleVersions="none"),
           _top(fld("A", "int32", "0+", taggedVersions="0+", tag=0))),
     "tagged-versions-flexible", "TestRequest.A"),
    ("tag outside the field override's flexible versions",
     _top(fld("A", "string", "2+", flexibleVersions="none", taggedVersions="2+", tag=0)),
     "tagged-versions-flexible", "TestRequest.A"),
    ("null default on non-nullable type", _top(fld("A", "int32", default="null")),
     "bad-default", "TestRequest.A"),
    ("int16 default out of range", _top(fld("A", "int16", default=40000)), "bad-default", "TestRequest.A"),
    ("hex beyond int32", _top(fld("A", "int32", default="0x80000000")), "bad-default", "TestRequest.A"),
    ("negative hex", _top(fld("A", "int32", default="-0x1")), "bad-default", "TestRequest.A"),
    ("python-only int syntax", _top(fld("A", "int32", default="1_000")), "bad-default", "TestRequest.A"),
    ("negative unsigned", _top(fld("A", "uint16", default="-1")), "bad-default", "TestRequest.A"),
    ("bool default", _top(fld("A", "bool", default="yes")), "bad-default", "TestRequest.A"),
    ("JSON bool for an int", _top(fld("A", "int32", default=True)), "bad-default", "TestRequest.A"),
    ("JSON number for a string", _top(fld("A", "string", default=5)), "bad-default", "TestRequest.A"),
    ("float default", _top(fld("A", "float64", default="1.5f")), "bad-default", "TestRequest.A"),
    ("hex uuid default", _top(fld("A", "uuid", default="00000000-0000-0000-0000-000000000000")),
     "bad-default", "TestRequest.A"),
    ("bytes default", _top(fld("A", "bytes", default="AAAA")), "bad-default", "TestRequest.A"),
    ("array default", _top(fld("A", "[]int32", default="[]")), "bad-default", "TestRequest.A"),
    ("null default on array not always nullable",
     _top(fld("A", "[]int32", nullableVersions="1+", default="null")),
     "null-default-not-nullable", "TestRequest.A"),
]


@pytest.mark.parametrize(("change", "rule", "path"), [c[1:] for c in FAILING], ids=[c[0] for c in FAILING])
def test_more_failures(change: Callable[[dict[str, Any]], object], rule: str, path: str) -> None:
    assert_single(mutated(change), rule, path)


def _removed_api(d: dict[str, Any]) -> None:
    # Kafka keeps removed APIs as files with validVersions "none" and nothing else.
    d.clear()
    d.update(apiKey=4, type="request", name="LeaderAndIsrRequest", validVersions="none")


PASSING: list[tuple[str, Callable[[dict[str, Any]], object]]] = [
    # Kafka 4.0 raised FetchRequest's baseline to 4 and kept "0+" / "0-14" fields.
    ("fields older than validVersions", _both(lambda d: d.update(validVersions="2-3"),
                                              _top(fld("Old", "int32", "0-1"), fld("Older", "int32", "0")))),
    # CreateTopicsResponse: versions "1+", nullableVersions "0+".
    ("nullable starting before the field", _top(fld("A", "string", "1+", nullableVersions="0+"))),
    # Kafka only requires taggedVersions within versions: mandatory first, tagged later.
    ("tagged from a later version", _top(fld("A", "int32", "0+", taggedVersions="2+", tag=0))),
    ("tagged struct with defaults",
     _top(fld("State", "State", "2+", taggedVersions="2+", tag=0,
              fields=[fld("Epoch", "int64", "2+", default="-1")]))),
    ("removed API", _removed_api),
    ("string flags as Kafka writes them", _both(_top(fld("A", "int32", ignorable="true")),
                                                lambda d: d["fields"][1]["fields"][0].update(mapKey="true"))),
    ("mapKey false at top level", _top(fld("A", "int32", mapKey="false"))),
    ("common struct used in arrays with a map key", _both(_common(OWNER), _top(fld("Owners", "[]Owner")))),
    ("common struct shared by two fields",
     _both(_common({"name": "Owner", "versions": "0+", "fields": [fld("Id", "int32")]}),
           _top(fld("A", "Owner"), fld("B", "[]Owner", "1+")))),
    ("field-level flexibleVersions none", _top(fld("ClientId", "string", flexibleVersions="none"))),
    ("entityType on an array", _top(fld("Brokers", "[]int32", entityType="brokerId"))),
    ("coordinator-key", lambda d: (d.pop("listeners"), d.update(type="coordinator-key", name="K",
                                                                validVersions="0", flexibleVersions="none",
                                                                fields=[fld("GroupId", "string")]))),
    ("about everywhere", _both(lambda d: d.update(about="x"),
                               _common({"name": "Owner", "versions": "0+", "about": "y", "fields": []}),
                               _top(fld("Owner", "Owner")))),
    ("defaults", _top(
        fld("I8", "int8", default="-128"), fld("I16", "int16", default="0x7fff"),
        fld("I32", "int32", default=-1),
        fld("I64", "int64", default="9223372036854775807"), fld("U16", "uint16", default="65535"),
        fld("U32", "uint32", default="0xffffffff"), fld("Plus", "int32", default="+5"),
        fld("F", "float64", default="1e-3"), fld("F2", "float64", default=0.5),
        fld("B", "bool", default=True),
        fld("B2", "bool", default="False"), fld("S", "string", default=""),
        fld("S2", "string", default="x y"),
        fld("U", "uuid", default="AAAAAAAAAAAAAAAAAAAAAQ"), fld("By", "bytes", default=""),
        fld("N", "string", nullableVersions="0+", default="null"),
        fld("NB", "bytes", nullableVersions="0+", default="null"),
        fld("NA", "[]int32", nullableVersions="0+", default="null"))),
]


@pytest.mark.parametrize("change", [c[1] for c in PASSING], ids=[c[0] for c in PASSING])
def test_accepted(change: Callable[[dict[str, Any]], object]) -> None:
    assert errors(mutated(change)) == []


@given(st.integers(0, MAX_VERSION), st.integers(0, MAX_VERSION))
def test_version_range_round_trip(low: int, high: int) -> None:
    versions = VersionRange(low, high)
    expected = VersionRange.parse("none") if versions.empty else versions
    assert VersionRange.parse(str(versions)) == expected


# ---------------------------------------------------------------------------
# the project's own spec files


def _project_specs() -> list[Path]:
    found = []
    for path in sorted((REPO / "schemas").rglob("*.json")):
        if path.name.endswith(".schema.json"):
            continue
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            doc = None  # may carry // comments; read_spec_file below decides
        if doc is None or (isinstance(doc, dict) and "fields" in doc and "type" in doc):
            found.append(path)
    return found


@pytest.mark.parametrize("path", _project_specs(), ids=lambda p: str(p.relative_to(REPO)))
def test_project_spec_passes(path: Path) -> None:
    doc = read_spec_file(path)
    if "fields" not in doc or "type" not in doc:
        pytest.skip("not a message spec")
    problems = [str(e) for e in iter_spec_errors(doc, str(path.relative_to(REPO)))]
    assert problems == []
