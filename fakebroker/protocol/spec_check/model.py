"""The checker's model of a message-spec document: version ranges, and every struct and
field with the versions it lives in (what the semantic rules compute with)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..errors import SpecError


# schemas/ of a source checkout, else the copy an installed wheel ships (fakebroker/_schemas).
SCHEMA_PATH = next(d / "message-spec.schema.json" for d in (Path(__file__).resolve().parents[3] / "schemas",
                                                            Path(__file__).resolve().parents[2] / "_schemas")
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
