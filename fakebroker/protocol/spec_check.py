"""Strict checker for message-spec documents in Apache Kafka's JSON message-spec format.

Two layers run in order:

1. ``schemas/message-spec.schema.json`` (JSON Schema 2020-12): required and allowed keys,
   JSON types, the shape of version strings, type strings and names.
2. Semantic rules the schema cannot express, one small function per rule (``RULES``).

Version numbers are checked before the other semantic rules, and nothing after the schema
runs on a document the schema rejects: the semantic rules rely on its structure.

Error paths
-----------
``SpecError.path`` names the object at fault, built from names rather than indexes:

* ``JoinGroupRequest`` - the message itself (top-level keys such as ``validVersions``);
* ``JoinGroupRequest.Protocols.Name`` - a field, nested fields joined with dots
  (the fields of a struct or array-of-struct field follow that field's name);
* ``JoinGroupRequest.commonStructs[Assignment].Partitions`` - a common struct and its fields.

An unusable name (missing or not a string) falls back to the index: ``JoinGroupRequest.fields[3]``;
a missing message name shows as ``<message>``. The offending key (``versions``, ``default``,
...) is named at the start of the message text, not in the path.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .errors import SpecError

if TYPE_CHECKING:
    import jsonschema

__all__ = [
    "RULES", "RULE_IDS", "SpecError", "VersionRange",
    "check_spec", "flag", "iter_spec_errors", "load_schema",
]

# schemas/ of a source checkout, else the copy an installed wheel ships (fakebroker/_schemas).
SCHEMA_PATH = next(d / "message-spec.schema.json" for d in (Path(__file__).resolve().parents[2] / "schemas",
                                                            Path(__file__).resolve().parents[1] / "_schemas")
                   if (d / "message-spec.schema.json").is_file())

MAX_VERSION = 32767  # versions are int16; Kafka represents "N+" as N..Short.MAX_VALUE

INT_RANGES: dict[str, tuple[int, int]] = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
}
PRIMITIVES = frozenset({*INT_RANGES, "bool", "float64", "string", "bytes", "uuid", "records"})
# Kafka's FieldType.canBeNullable(): fixed-width types (ints, bool, float64, uuid) cannot be null.
NULLABLE_PRIMITIVES = frozenset({"string", "bytes", "records"})
# EntityType's base type; for arrays Kafka checks the element type.
ENTITY_TYPES: dict[str, str] = {
    "transactionalId": "string",
    "producerId": "int64",
    "groupId": "string",
    "topicName": "string",
    "brokerId": "int32",
}

# Every rule id a SpecError from this module can carry, with what it means.
RULE_IDS: dict[str, str] = {
    # JSON Schema layer (schemas/message-spec.schema.json)
    "missing-key": "a required key is absent",
    "unknown-key": "a key the format does not define (Kafka's Jackson rejects unknown properties)",
    "wrong-json-type": "a value has the wrong JSON type",
    "bad-version-string": "a version string is not 'N', 'N-M', 'N+' or 'none' with N, M in 0..32767",
    "bad-field-type": "a field type is not a primitive, a capitalised struct name or '[]' of either",
    "array-of-array": "an array whose elements are arrays",
    "bad-name": "a message, struct or field name is not a valid identifier",
    "bad-message-type": "the top-level type is not one Kafka 4.2 knows",
    "bad-listener": "a listeners entry is not 'broker' or 'controller' (or is repeated)",
    "bad-entity-type": "an unknown entityType",
    "out-of-range": "apiKey outside 0..32767 or a negative tag",
    # semantic layer
    "version-range-inverted": "'N-M' with N > M",
    "valid-versions-closed": "validVersions is open-ended",
    "flexible-versions-open-ended": "message flexibleVersions is neither 'N+' nor 'none'",
    "request-only-key": "listeners or latestVersionUnstable on a message that is not a request",
    "coordinator-key-versions": "a coordinator-key without validVersions '0' and flexibleVersions 'none'",
    "duplicate-field-name": "two fields of one struct share a name",
    "fields-on-non-struct": "'fields' on a field whose type is not a struct or array of structs",
    "struct-unresolved": "a struct type defined neither inline nor in commonStructs",
    "common-struct-redefined": "a field re-specifies the fields of a common struct",
    "struct-defined-twice": "a struct name defined or used inline by two fields, twice in commonStructs, "
                            "or equal to the message name",
    "struct-recursion": "a struct that contains itself",
    "versions-outside-parent": "field versions starting or (closed) ending after the parent's versions, "
                               "or a nested field ending before its parent begins",
    "common-struct-versions": "a field uses a common struct in versions the struct does not have",
    "nullable-type": "nullableVersions on a type that cannot be null",
    "nullable-versions-outside-field": "nullableVersions disjoint from, or ending after, "
                                       "the field's versions",
    "tag-without-tagged-versions": "a tag without taggedVersions",
    "tagged-versions-without-tag": "taggedVersions without a tag",
    "tagged-versions-open-ended": "taggedVersions is not 'N+'",
    "tagged-versions-subset": "taggedVersions not within the field's versions",
    "tagged-versions-flexible": "taggedVersions not within the flexible versions",
    "tagged-nullable-mixed": "a tagged field nullable in only some of its tagged versions",
    "tagged-map-key": "a tagged field that is a map key",
    "tagged-records": "a tagged records field",
    "duplicate-tag": "two fields of one struct share a tag",
    "tags-not-contiguous": "the tags of a struct are not 0..n-1",
    "bad-default": "a default that does not parse as a value of the field's type",
    "null-default-not-nullable": "default 'null' on a field not nullable in all its versions",
    "map-key-outside-array": "mapKey on a field that is not in an array-of-struct element",
    "field-flexible-versions-type": "a field-level flexibleVersions on a type other than string or bytes",
    "field-flexible-versions-subset": "a field-level flexibleVersions outside the message's flexibleVersions",
    "zero-copy-type": "zeroCopy on a type other than bytes",
    "entity-type-mismatch": "an entityType whose base type differs from the field's type",
}

_DEC_INT = re.compile(r"[+-]?[0-9]+")
_HEX_INT = re.compile(r"0x[0-9a-fA-F]+")
# What both Java's Double.parseDouble and Python's float() accept (no hex floats, no f/d suffix).
_FLOAT = re.compile(r"[+-]?(NaN|Infinity|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?)")
_BASE64URL = re.compile(r"[A-Za-z0-9_-]{22}(==)?")


# ---------------------------------------------------------------------------
# Version ranges


@dataclass(frozen=True)
class VersionRange:
    """An inclusive range of int16 versions; ``high == MAX_VERSION`` is "N+", low > high is empty."""

    low: int
    high: int

    @staticmethod
    def parse(text: str) -> VersionRange:
        """Parse a schema-valid version string ("N", "N-M", "N+", "none")."""
        if text == "none":
            return NO_VERSIONS
        if text.endswith("+"):
            return VersionRange(int(text[:-1]), MAX_VERSION)
        low, _, high = text.partition("-")
        return VersionRange(int(low), int(high or low))

    @property
    def empty(self) -> bool:
        return self.low > self.high

    @property
    def open_ended(self) -> bool:
        return not self.empty and self.high == MAX_VERSION

    def intersect(self, other: VersionRange) -> VersionRange:
        low, high = max(self.low, other.low), min(self.high, other.high)
        return VersionRange(low, high) if low <= high else NO_VERSIONS

    def contains(self, other: VersionRange) -> bool:
        """True if every version of ``other`` is in this range (vacuously for an empty ``other``)."""
        return other.empty or (self.low <= other.low and other.high <= self.high)

    def overlaps(self, other: VersionRange) -> bool:
        return not self.intersect(other).empty

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.high == MAX_VERSION:
            return f"{self.low}+"
        return str(self.low) if self.low == self.high else f"{self.low}-{self.high}"


NO_VERSIONS = VersionRange(0, -1)
ALL_VERSIONS = VersionRange(0, MAX_VERSION)


# ---------------------------------------------------------------------------
# Document model (built only from schema-valid documents)


@dataclass(eq=False)
class FieldInfo:
    """One field with the version context it lives in."""

    raw: Mapping[str, Any]
    path: str
    owner: StructInfo
    parent_declared: VersionRange  # versions of the enclosing field / common struct / message
    parent_effective: VersionRange  # intersection of validVersions and every enclosing range

    @property
    def name(self) -> str:
        return str(self.raw["name"])

    @property
    def type(self) -> str:
        return str(self.raw["type"])

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def base_type(self) -> str:
        """The type without its array prefix."""
        return self.type[2:] if self.is_array else self.type

    @property
    def struct_name(self) -> str | None:
        """The struct this field holds (directly or as array elements), if any."""
        return None if self.base_type in PRIMITIVES else self.base_type

    @property
    def versions(self) -> VersionRange:
        return VersionRange.parse(self.raw["versions"])

    @property
    def effective(self) -> VersionRange:
        return self.versions.intersect(self.parent_effective)

    def ranges(self, key: str) -> VersionRange:
        text = self.raw.get(key)
        return NO_VERSIONS if text is None else VersionRange.parse(text)

    @property
    def tag(self) -> int | None:
        tag = self.raw.get("tag")
        return None if tag is None else int(tag)


@dataclass(eq=False)
class StructInfo:
    """A list of fields: the message body, an inline struct or a common struct."""

    name: str
    path: str
    kind: Literal["message", "inline", "common"]
    versions: VersionRange
    defined_by: FieldInfo | None = None  # the field declaring an inline struct
    fields: list[FieldInfo] = field(default_factory=list)


@dataclass(eq=False)
class SpecModel:
    doc: Mapping[str, Any]
    file: str
    name: str
    kind: str
    valid: VersionRange
    flexible: VersionRange
    structs: list[StructInfo]
    common: dict[str, StructInfo]  # first definition of each common struct name
    fields: list[FieldInfo]  # every field, message fields first, then common-struct fields

    def error(self, path: str, rule: str, message: str) -> SpecError:
        return SpecError(self.file, path, rule, message)

    def users(self, struct_name: str) -> list[FieldInfo]:
        return [f for f in self.fields if f.struct_name == struct_name]


def flag(raw: Mapping[str, Any], key: str) -> bool:
    """A boolean key; Kafka (Jackson) also takes the strings "true" and "false"."""
    value = raw.get(key, False)
    return value is True or value == "true"


def _build_model(doc: Mapping[str, Any], file: str) -> SpecModel:
    name = str(doc["name"])
    valid = VersionRange.parse(doc["validVersions"])
    flexible = VersionRange.parse(doc.get("flexibleVersions", "none"))
    structs: list[StructInfo] = []
    fields: list[FieldInfo] = []

    def add_struct(struct: StructInfo, raw_fields: Sequence[Mapping[str, Any]],
                   declared: VersionRange, effective: VersionRange) -> None:
        structs.append(struct)
        for raw in raw_fields:
            info = FieldInfo(raw, f"{struct.path}.{raw['name']}", struct, declared, effective)
            struct.fields.append(info)
            fields.append(info)
            # Only struct-typed fields define nested structs; "fields" on other types is its own error.
            if "fields" in raw and info.struct_name is not None:
                inline = StructInfo(info.struct_name, info.path, "inline", info.versions, info)
                add_struct(inline, raw["fields"], info.versions, info.effective)

    add_struct(StructInfo(name, name, "message", valid), doc.get("fields", []), valid, valid)
    common: dict[str, StructInfo] = {}
    for raw in doc.get("commonStructs", []):
        versions = VersionRange.parse(raw["versions"])
        struct = StructInfo(raw["name"], f"{name}.commonStructs[{raw['name']}]", "common", versions)
        common.setdefault(struct.name, struct)
        # Kafka registers a common struct with its own versions as the parent versions.
        add_struct(struct, raw["fields"], versions, versions.intersect(valid))
    return SpecModel(doc, file, name, str(doc["type"]), valid, flexible, structs, common, fields)


# ---------------------------------------------------------------------------
# Layer 1: JSON Schema


@functools.lru_cache(maxsize=1)
def load_schema() -> dict[str, Any]:
    """The structural schema, checked against the 2020-12 meta-schema once."""
    import jsonschema  # here, not at the top: a process whose specs are known good never needs it

    schema: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


@functools.lru_cache(maxsize=1)
def _validator() -> jsonschema.Draft202012Validator:
    import jsonschema

    return jsonschema.Draft202012Validator(load_schema())


# Rule ids for keywords whose failure means the same thing wherever it happens; other
# keywords take the rule id from the failing subschema's "x-rule".
_KEYWORD_RULES = {
    "required": "missing-key",
    "additionalProperties": "unknown-key",
    "type": "wrong-json-type",
}


def _locate(doc: Any, steps: Sequence[str | int]) -> tuple[str, str]:
    """Split a JSON path into (readable object path, remaining key path)."""
    root = doc.get("name") if isinstance(doc, dict) else None
    path = root if isinstance(root, str) and root else "<message>"
    node: Any = doc
    i = 0
    while i + 1 < len(steps) and steps[i] in ("fields", "commonStructs") and isinstance(steps[i + 1], int):
        key, index = steps[i], int(steps[i + 1])
        node = node[key][index]
        name = node.get("name") if isinstance(node, dict) else None
        label = name if isinstance(name, str) and name else str(index)
        path += f".{label}" if key == "fields" and label == name else f".{key}[{label}]"
        i += 2
    rest = ""
    for step in steps[i:]:
        rest += f"[{step}]" if isinstance(step, int) else (f".{step}" if rest else str(step))
    return path, rest


def _doc_order(doc: Any, steps: Sequence[str | int]) -> tuple[int, ...]:
    """Sort key putting errors in the order their location appears in the document."""
    key: list[int] = []
    node = doc
    for step in steps:
        if isinstance(node, dict) and isinstance(step, str):
            key.append(list(node).index(step) if step in node else len(node))
        elif isinstance(node, list) and isinstance(step, int):
            key.append(step)
        else:
            break
        node = node[step]
    return tuple(key)


def schema_errors(doc: Any, file: str) -> Iterator[SpecError]:
    """Layer 1: every JSON Schema violation, in document order."""
    errors = sorted(_validator().iter_errors(doc), key=lambda e: _doc_order(doc, list(e.absolute_path)))
    for err in errors:
        path, key = _locate(doc, list(err.absolute_path))
        subschema = err.schema if isinstance(err.schema, dict) else {}
        rule = _KEYWORD_RULES.get(str(err.validator)) or subschema.get("x-rule") or f"schema-{err.validator}"
        if str(err.validator) in _KEYWORD_RULES or "description" not in subschema:
            text = err.message
        else:
            text = f"{err.instance!r} is invalid; expected {subschema['description']}"
        yield SpecError(file, path, rule, f"{key}: {text}" if key else text)


# ---------------------------------------------------------------------------
# Layer 2a: version numbers (run before the rules that compute with ranges)


def _version_strings(doc: Mapping[str, Any]) -> Iterator[tuple[str, str, str]]:
    """(object path, key, text) for every version string in a schema-valid document."""
    name = str(doc["name"])
    for key in ("validVersions", "deprecatedVersions", "flexibleVersions"):
        if key in doc:
            yield name, key, doc[key]

    def walk(prefix: str, raw_fields: Sequence[Mapping[str, Any]]) -> Iterator[tuple[str, str, str]]:
        for raw in raw_fields:
            path = f"{prefix}.{raw['name']}"
            for key in ("versions", "nullableVersions", "taggedVersions", "flexibleVersions"):
                if key in raw:
                    yield path, key, raw[key]
            yield from walk(path, raw.get("fields", []))

    yield from walk(name, doc.get("fields", []))
    for struct in doc.get("commonStructs", []):
        path = f"{name}.commonStructs[{struct['name']}]"
        for key in ("versions", "deprecatedVersions"):
            if key in struct:
                yield path, key, struct[key]
        yield from walk(path, struct["fields"])


def check_version_numbers(doc: Mapping[str, Any], file: str) -> Iterator[SpecError]:
    """bad-version-string: every version number fits in an int16 (0..32767)."""
    for path, key, text in _version_strings(doc):
        numbers = [int(n) for n in re.findall(r"[0-9]+", text)]
        if any(n > MAX_VERSION for n in numbers):
            yield SpecError(file, path, "bad-version-string",
                            f"{key}: {text!r} has a version above {MAX_VERSION}")


def check_version_order(doc: Mapping[str, Any], file: str) -> Iterator[SpecError]:
    """version-range-inverted: in "N-M", N <= M (Kafka would silently read "5-3" as no versions)."""
    for path, key, text in _version_strings(doc):
        low, dash, high = text.partition("-")
        if dash and int(low) > int(high):
            yield SpecError(file, path, "version-range-inverted",
                            f"{key}: {text!r} is an empty range; the first version must not exceed the last")


# ---------------------------------------------------------------------------
# Layer 2b: semantic rules over the model. Each yields SpecErrors; RULES fixes their order.


def check_valid_versions_closed(spec: SpecModel) -> Iterator[SpecError]:
    """valid-versions-closed: validVersions is "N", "N-M" or "none", never open-ended "N+".

    Kafka's generator needs the highest supported version of every message.
    """
    if spec.valid.open_ended:
        yield spec.error(spec.name, "valid-versions-closed",
                         f"validVersions: {spec.doc['validVersions']!r} is open-ended; "
                         "give the highest version, e.g. '0-9'")


def check_flexible_versions_open_ended(spec: SpecModel) -> Iterator[SpecError]:
    """flexible-versions-open-ended: message flexibleVersions is "N+" or "none".

    Once a version is flexible every later one is too (Kafka's MessageSpec enforces this).
    """
    text = spec.doc.get("flexibleVersions")
    if text is not None and not spec.flexible.empty and not spec.flexible.open_ended:
        yield spec.error(spec.name, "flexible-versions-open-ended",
                         f"flexibleVersions: {text!r} must be 'N+' or 'none'")


def check_request_only_keys(spec: SpecModel) -> Iterator[SpecError]:
    """request-only-key: listeners and latestVersionUnstable are only valid on type request."""
    if spec.kind == "request":
        return
    if spec.doc.get("listeners"):
        yield spec.error(spec.name, "request-only-key",
                         f"listeners: only valid for type 'request', not {spec.kind!r}")
    if flag(spec.doc, "latestVersionUnstable"):
        yield spec.error(spec.name, "request-only-key",
                         f"latestVersionUnstable: only valid for type 'request', not {spec.kind!r}")


def check_coordinator_key_versions(spec: SpecModel) -> Iterator[SpecError]:
    """coordinator-key-versions: a coordinator-key has validVersions "0" and flexibleVersions "none"."""
    if spec.kind != "coordinator-key":
        return
    if spec.valid != VersionRange(0, 0):
        yield spec.error(spec.name, "coordinator-key-versions",
                         f"validVersions: {spec.doc['validVersions']!r} must be '0' for a coordinator-key")
    if not spec.flexible.empty:
        yield spec.error(spec.name, "coordinator-key-versions",
                         f"flexibleVersions: {spec.doc.get('flexibleVersions')!r} must be 'none' "
                         "for a coordinator-key")


# Attributes the generated classes use themselves (``__init__(self, ...)``, the unknown
# tagged fields' slot): a field mapping to one would not compile.
RESERVED_ATTRS = frozenset({"self", "cls"})


def check_duplicate_field_names(spec: SpecModel) -> Iterator[SpecError]:
    """duplicate-field-name: field names are unique within one struct."""
    for struct in spec.structs:
        seen: set[str] = set()
        for f in struct.fields:
            if f.name in seen:
                yield spec.error(f.path, "duplicate-field-name",
                                 f"a second field named {f.name!r} in {struct.name}")
            seen.add(f.name)


def check_field_attributes(spec: SpecModel) -> Iterator[SpecError]:
    """The Python attributes fields map to are unique within one struct
    (field-attribute-collision: ``GroupId`` and ``GroupID`` are both ``group_id``) and not
    reserved by the generated code (field-name-reserved: ``Self`` is ``self``)."""
    from .spec import snake

    for struct in spec.structs:
        attrs: dict[str, str] = {}
        for f in struct.fields:
            attr = snake(f.name)
            if attr in RESERVED_ATTRS or attr.startswith("_") or not attr.isidentifier():
                yield spec.error(f.path, "field-name-reserved",
                                 f"field {f.name!r} maps to the attribute {attr!r}, which the "
                                 "generated code reserves or cannot use")
            elif attrs.get(attr, f.name) != f.name:
                yield spec.error(f.path, "field-attribute-collision",
                                 f"fields {attrs[attr]!r} and {f.name!r} of {struct.name} both "
                                 f"map to the attribute {attr!r}")
            attrs.setdefault(attr, f.name)


def check_fields_on_non_struct(spec: SpecModel) -> Iterator[SpecError]:
    """fields-on-non-struct: only struct and array-of-struct fields carry "fields"."""
    for f in spec.fields:
        if "fields" in f.raw and f.struct_name is None:
            yield spec.error(f.path, "fields-on-non-struct",
                             f"fields: type {f.type!r} is not a struct, so it cannot have fields")


def check_struct_definitions(spec: SpecModel) -> Iterator[SpecError]:
    """struct-unresolved, common-struct-redefined, struct-defined-twice: every struct type
    resolves to exactly one definition.

    A struct is defined either inline (the first field using it carries "fields") or in
    commonStructs, never both. As in Kafka's StructRegistry, an inline struct belongs to the
    one field that declares it: a second field naming it is an error even without "fields",
    since shared structs belong in commonStructs. Struct names also differ from the message name.
    """
    seen_common: set[str] = set()
    for struct in spec.structs:
        if struct.kind == "common":
            if struct.name in seen_common:
                yield spec.error(struct.path, "struct-defined-twice",
                                 f"common struct {struct.name} is defined twice")
            seen_common.add(struct.name)
    inline_defs: dict[str, str] = {}
    for f in spec.fields:
        if "fields" in f.raw and f.struct_name is not None and f.struct_name not in spec.common:
            inline_defs.setdefault(f.struct_name, f.path)
    claimed: dict[str, str] = {}
    for f in spec.fields:
        name = f.struct_name
        if name is None:
            continue
        if name == spec.name:
            yield spec.error(f.path, "struct-defined-twice",
                             f"type: struct {name} has the same name as the message")
        elif name in spec.common:
            if "fields" in f.raw:
                yield spec.error(f.path, "common-struct-redefined",
                                 f"fields: {name} is a common struct; refer to it without fields")
        elif name in claimed:
            yield spec.error(f.path, "struct-defined-twice",
                             f"type: struct {name} is already defined inline at {claimed[name]}; "
                             "a struct used by several fields belongs in commonStructs")
        elif name in inline_defs:
            if "fields" not in f.raw:
                yield spec.error(f.path, "struct-defined-twice",
                                 f"type: struct {name} is defined inline at {inline_defs[name]}; "
                                 "a struct used by several fields belongs in commonStructs")
            claimed[name] = f.path
        else:
            yield spec.error(f.path, "struct-unresolved",
                             f"type: struct {name} has no inline fields and is not in commonStructs")


def check_struct_recursion(spec: SpecModel) -> Iterator[SpecError]:
    """struct-recursion: no struct contains itself, directly or through other structs.

    Only common structs can be referenced by name, so every cycle runs through one.
    """
    children: dict[str, list[FieldInfo]] = {}
    for struct in spec.structs:
        if struct.kind == "inline" and struct.name in children:
            continue  # a second inline definition is reported by check_struct_definitions
        if struct.kind == "common" and spec.common.get(struct.name) is not struct:
            continue
        children[struct.name] = [f for f in struct.fields if f.struct_name is not None]
    reported: set[frozenset[str]] = set()

    def visit(name: str, stack: list[str]) -> Iterator[SpecError]:
        for f in children.get(name, []):
            target = str(f.struct_name)
            if target in stack:
                cycle = stack[stack.index(target):] + [target]
                key = frozenset(cycle)
                if key not in reported:
                    reported.add(key)
                    yield spec.error(f.path, "struct-recursion",
                                     "type: struct recursion " + " -> ".join(cycle))
            elif target in spec.common or target in children:
                yield from visit(target, stack + [target])

    for name in spec.common:
        yield from visit(name, [name])


def check_versions_within_parent(spec: SpecModel) -> Iterator[SpecError]:
    """versions-outside-parent: a field's versions lie within its parent's versions.

    The parent of a top-level field is validVersions; a struct's fields inherit the versions
    of the field holding the struct (intersected all the way up); a common struct's fields
    have the struct's own versions (its users are checked by common-struct-versions).
    Versions *below* the parent's first version are allowed, as in Kafka: when a message's
    oldest versions are dropped, fields keep "0+" (see FetchRequest 4-18 with "0+" fields).
    What is rejected: a field starting after the parent's last version, a closed range
    ending after it, and a nested field ending before its enclosing field begins.
    """
    for f in spec.fields:
        versions, parent = f.versions, f.parent_effective
        if versions.empty or parent.empty:
            continue
        text = f.raw["versions"]
        if versions.low > parent.high:
            yield spec.error(f.path, "versions-outside-parent",
                             f"versions: {text!r} starts after the parent's last version ({parent})")
        elif not versions.open_ended and versions.high > parent.high:
            yield spec.error(f.path, "versions-outside-parent",
                             f"versions: {text!r} ends after the parent's last version ({parent})")
        elif f.owner.kind != "message" and versions.high < f.parent_declared.low:
            yield spec.error(f.path, "versions-outside-parent",
                             f"versions: {text!r} ends before the enclosing "
                             f"{'field' if f.owner.kind == 'inline' else 'struct'} "
                             f"begins ({f.parent_declared})")


def check_common_struct_versions(spec: SpecModel) -> Iterator[SpecError]:
    """common-struct-versions: every field using a common struct is present only in versions
    the common struct supports."""
    for f in spec.fields:
        struct = spec.common.get(f.struct_name or "")
        if struct is not None and not struct.versions.contains(f.effective):
            yield spec.error(f.path, "common-struct-versions",
                             f"versions: used in {f.effective} but common struct {struct.name} "
                             f"only has versions {struct.versions}")


def _nullable_type(f: FieldInfo) -> bool:
    return f.is_array or f.struct_name is not None or f.type in NULLABLE_PRIMITIVES


def check_nullable_type(spec: SpecModel) -> Iterator[SpecError]:
    """nullable-type: nullableVersions only on string, bytes, records, arrays and structs."""
    for f in spec.fields:
        if not f.ranges("nullableVersions").empty and not _nullable_type(f):
            yield spec.error(f.path, "nullable-type",
                             f"nullableVersions: type {f.type!r} cannot be null")


def check_nullable_within_versions(spec: SpecModel) -> Iterator[SpecError]:
    """nullable-versions-outside-field: nullableVersions overlaps the field's versions and a
    closed nullable range does not end after them.

    Starting below the field's first version is allowed: Kafka's own specs use nullable "0+"
    on fields added later (CreateTopicsResponse.Topics.ErrorMessage).
    """
    for f in spec.fields:
        nullable, versions = f.ranges("nullableVersions"), f.versions
        if nullable.empty:
            continue
        text = f.raw["nullableVersions"]
        if not nullable.overlaps(versions):
            yield spec.error(f.path, "nullable-versions-outside-field",
                             f"nullableVersions: {text!r} has no version in common with versions "
                             f"{f.raw['versions']!r}")
        elif not nullable.open_ended and nullable.high > versions.high:
            yield spec.error(f.path, "nullable-versions-outside-field",
                             f"nullableVersions: {text!r} ends after the field's last version "
                             f"({versions})")


def check_tag_pairing(spec: SpecModel) -> Iterator[SpecError]:
    """tag-without-tagged-versions, tagged-versions-without-tag: "tag" and "taggedVersions" come together."""
    for f in spec.fields:
        tagged = f.ranges("taggedVersions")
        if f.tag is not None and tagged.empty:
            yield spec.error(f.path, "tag-without-tagged-versions",
                             f"tag: {f.tag} is given but taggedVersions is missing or 'none'")
        elif f.tag is None and not tagged.empty:
            yield spec.error(f.path, "tagged-versions-without-tag",
                             f"taggedVersions: {f.raw['taggedVersions']!r} is given without a tag")


def check_tagged_versions_open_ended(spec: SpecModel) -> Iterator[SpecError]:
    """tagged-versions-open-ended: taggedVersions is "N+" (or "none")."""
    for f in spec.fields:
        tagged = f.ranges("taggedVersions")
        if not tagged.empty and not tagged.open_ended:
            yield spec.error(f.path, "tagged-versions-open-ended",
                             f"taggedVersions: {f.raw['taggedVersions']!r} must be 'N+'")


def check_tagged_versions_subset(spec: SpecModel) -> Iterator[SpecError]:
    """tagged-versions-subset: taggedVersions is a subset of the field's versions.

    This is Kafka's FieldSpec rule (tagged ∩ versions == tagged). A field may therefore be
    mandatory in older versions and tagged from some later version on.
    """
    for f in spec.fields:
        tagged = f.ranges("taggedVersions")
        if not f.versions.contains(tagged):
            yield spec.error(f.path, "tagged-versions-subset",
                             f"taggedVersions: {f.raw['taggedVersions']!r} is not within versions "
                             f"{f.raw['versions']!r}")


def _field_flexible(spec: SpecModel, f: FieldInfo) -> VersionRange:
    text = f.raw.get("flexibleVersions")
    return spec.flexible if text is None else VersionRange.parse(text)


def check_tagged_versions_flexible(spec: SpecModel) -> Iterator[SpecError]:
    """tagged-versions-flexible: tagged fields exist only in flexible versions.

    Tagged fields travel in the tagged-field section that only flexible versions have; the
    field's own flexibleVersions override counts when present (as in Kafka's generator).
    """
    for f in spec.fields:
        tagged, flexible = f.ranges("taggedVersions"), _field_flexible(spec, f)
        if not flexible.contains(tagged):
            yield spec.error(f.path, "tagged-versions-flexible",
                             f"taggedVersions: {f.raw['taggedVersions']!r} is not within the "
                             f"flexible versions ({flexible})")


def check_tagged_nullable(spec: SpecModel) -> Iterator[SpecError]:
    """tagged-nullable-mixed: a tagged field is nullable in all of its tagged versions or in none."""
    for f in spec.fields:
        tagged = f.ranges("taggedVersions")
        both = f.ranges("nullableVersions").intersect(tagged)
        if f.tag is not None and not tagged.empty and not both.empty and both != tagged:
            yield spec.error(f.path, "tagged-nullable-mixed",
                             f"nullableVersions: {f.raw['nullableVersions']!r} covers only part of "
                             f"taggedVersions {f.raw['taggedVersions']!r}")


def check_tagged_map_key(spec: SpecModel) -> Iterator[SpecError]:
    """tagged-map-key: a tagged field cannot be a map key."""
    for f in spec.fields:
        if f.tag is not None and flag(f.raw, "mapKey"):
            yield spec.error(f.path, "tagged-map-key", "mapKey: a tagged field cannot be a map key")


def check_tagged_records(spec: SpecModel) -> Iterator[SpecError]:
    """tagged-records: a records field cannot be tagged (Kafka's generator cannot write one)."""
    for f in spec.fields:
        if f.type == "records" and not f.ranges("taggedVersions").empty:
            yield spec.error(f.path, "tagged-records", "taggedVersions: a records field cannot be tagged")


def check_tags_unique(spec: SpecModel) -> Iterator[SpecError]:
    """duplicate-tag: tags are unique within one struct."""
    for struct in spec.structs:
        seen: dict[int, str] = {}
        for f in struct.fields:
            if f.tag is None:
                continue
            if f.tag in seen:
                yield spec.error(f.path, "duplicate-tag", f"tag: {f.tag} is already used by {seen[f.tag]}")
            else:
                seen[f.tag] = f.name


def check_tags_contiguous(spec: SpecModel) -> Iterator[SpecError]:
    """tags-not-contiguous: the tags of one struct are 0..n-1 (small tags are cheaper on the wire)."""
    for struct in spec.structs:
        tags = {f.tag for f in struct.fields if f.tag is not None}
        missing = [i for i in range(len(tags)) if i not in tags]
        if missing:
            yield spec.error(struct.path, "tags-not-contiguous",
                             f"tags {sorted(tags)} skip {missing[0]}; use tags 0..{len(tags) - 1}")


def _default_text(raw: Any) -> str:
    """The default as Kafka reads it (Jackson turns JSON scalars into text)."""
    if isinstance(raw, bool):
        return "true" if raw else "false"
    return str(raw)


def _default_problem(f: FieldInfo, raw: Any) -> str | None:
    """Why ``raw`` is not a usable default for ``f``'s type, or None if it is."""
    kind = "array" if f.is_array else "struct" if f.struct_name else f.type
    # JSON numbers and booleans are accepted only where they mean the same in Kafka and here.
    if isinstance(raw, bool) and kind != "bool":
        return "a JSON boolean is only a default for bool fields"
    if isinstance(raw, (int, float)) and not isinstance(raw, bool) and kind not in (*INT_RANGES, "float64"):
        return "a JSON number is only a default for numeric fields"
    text = _default_text(raw)
    if kind in INT_RANGES:
        if text == "":
            return None
        if _HEX_INT.fullmatch(text):
            value = int(text[2:], 16)
        elif _DEC_INT.fullmatch(text):
            value = int(text)
        else:
            return "expected a decimal integer or 0x-prefixed hex"
        low, high = INT_RANGES[kind]
        return None if low <= value <= high else f"out of range for {kind} ({low}..{high})"
    if kind == "bool":
        return None if text.lower() in ("", "true", "false") else "expected 'true' or 'false'"
    if kind == "float64":
        return None if text == "" or _FLOAT.fullmatch(text) else "expected a decimal number"
    if kind == "uuid":
        if text == "":
            return None
        try:
            decoded = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        except (binascii.Error, ValueError):
            decoded = b""
        if not _BASE64URL.fullmatch(text) or len(decoded) != 16:
            return "expected Kafka's URL-safe base64 UUID form (22 characters, e.g. 'AAAAAAAAAAAAAAAAAAAAAA')"
        return None
    if kind == "string" or text == "null":
        return None  # "null" itself is judged by null-default-not-nullable
    return None if text == "" else f"a {kind} field only takes '' or 'null' as default"


def check_defaults(spec: SpecModel) -> Iterator[SpecError]:
    """bad-default: a default parses as a value of the field's type.

    ints: decimal or 0x-hex within the type's range; bool: "true"/"false"; float64: a decimal
    number; uuid: Kafka's base64 form; bytes, records, arrays and structs: "" or "null".
    """
    for f in spec.fields:
        if "default" not in f.raw:
            continue
        raw = f.raw["default"]
        if _default_text(raw) == "null" and not _nullable_type(f):
            yield spec.error(f.path, "bad-default", f"default: type {f.type!r} cannot be null")
            continue
        problem = _default_problem(f, raw)
        if problem is not None:
            yield spec.error(f.path, "bad-default", f"default: {raw!r} is invalid: {problem}")


def check_null_defaults(spec: SpecModel) -> Iterator[SpecError]:
    """null-default-not-nullable: a "null" default needs the field nullable in all its versions."""
    for f in spec.fields:
        if f.raw.get("default") != "null" or not _nullable_type(f):
            continue
        nullable = f.ranges("nullableVersions")
        if not nullable.contains(f.versions):
            yield spec.error(f.path, "null-default-not-nullable",
                             f"default: 'null' but nullableVersions {nullable} does not cover "
                             f"versions {f.raw['versions']!r}")


def check_map_keys(spec: SpecModel) -> Iterator[SpecError]:
    """map-key-outside-array: mapKey is only set on fields of an array-of-struct element."""
    for f in spec.fields:
        if not flag(f.raw, "mapKey"):
            continue
        owner = f.owner
        if owner.kind == "message":
            yield spec.error(f.path, "map-key-outside-array",
                             "mapKey: top-level fields cannot be map keys")
        elif owner.kind == "inline" and owner.defined_by is not None and not owner.defined_by.is_array:
            yield spec.error(f.path, "map-key-outside-array",
                             f"mapKey: {owner.name} is not the element of an array")
        elif owner.kind == "common":
            single = [u.path for u in spec.users(owner.name) if not u.is_array]
            if single:
                yield spec.error(f.path, "map-key-outside-array",
                                 f"mapKey: common struct {owner.name} is used outside an array "
                                 f"at {single[0]}")


def check_field_flexible_versions(spec: SpecModel) -> Iterator[SpecError]:
    """field-flexible-versions-type, field-flexible-versions-subset: a field-level flexibleVersions
    override is only for string and bytes fields, and lies within the message's flexibleVersions."""
    for f in spec.fields:
        text = f.raw.get("flexibleVersions")
        if text is None:
            continue
        if f.type not in ("string", "bytes"):
            yield spec.error(f.path, "field-flexible-versions-type",
                             "flexibleVersions: only string and bytes fields may override it, "
                             f"not {f.type!r}")
        elif not spec.flexible.contains(VersionRange.parse(text)):
            yield spec.error(f.path, "field-flexible-versions-subset",
                             f"flexibleVersions: {text!r} is not within the message's flexibleVersions "
                             f"({spec.flexible})")


def check_zero_copy(spec: SpecModel) -> Iterator[SpecError]:
    """zero-copy-type: zeroCopy is only for bytes fields."""
    for f in spec.fields:
        if flag(f.raw, "zeroCopy") and f.type != "bytes":
            yield spec.error(f.path, "zero-copy-type", f"zeroCopy: only bytes fields, not {f.type!r}")


def check_entity_types(spec: SpecModel) -> Iterator[SpecError]:
    """entity-type-mismatch: entityType matches the field's type (its element type for arrays)."""
    for f in spec.fields:
        expected = ENTITY_TYPES.get(f.raw.get("entityType", "unknown"))
        if expected is not None and f.base_type != expected:
            yield spec.error(f.path, "entity-type-mismatch",
                             f"entityType: {f.raw['entityType']!r} needs type {expected!r}, not {f.type!r}")


RULES: tuple[Callable[[SpecModel], Iterator[SpecError]], ...] = (
    check_valid_versions_closed,
    check_flexible_versions_open_ended,
    check_request_only_keys,
    check_coordinator_key_versions,
    check_duplicate_field_names,
    check_fields_on_non_struct,
    check_struct_definitions,
    check_struct_recursion,
    check_versions_within_parent,
    check_common_struct_versions,
    check_nullable_type,
    check_nullable_within_versions,
    check_tag_pairing,
    check_tagged_versions_open_ended,
    check_tagged_versions_subset,
    check_tagged_versions_flexible,
    check_tagged_nullable,
    check_tagged_map_key,
    check_tagged_records,
    check_tags_unique,
    check_tags_contiguous,
    check_defaults,
    check_null_defaults,
    check_map_keys,
    check_field_flexible_versions,
    check_zero_copy,
    check_entity_types,
    check_field_attributes,
)


# ---------------------------------------------------------------------------
# Entry points


def iter_spec_errors(doc: Any, file: str) -> Iterator[SpecError]:
    """Yield every violation: schema errors first; semantic ones only for a schema-valid document."""
    found = False
    for err in schema_errors(doc, file):
        found = True
        yield err
    if found:
        return
    for err in (*check_version_numbers(doc, file), *check_version_order(doc, file)):
        found = True
        yield err
    if found:
        return
    spec = _build_model(doc, file)
    for rule in RULES:
        yield from rule(spec)


def check_spec(doc: Any, file: str) -> None:
    """Raise a SpecError for the first violation in ``doc`` (a parsed spec file named ``file``)."""
    for err in iter_spec_errors(doc, file):
        raise err
