"""Semantic rules over field values and attributes: defaults, map keys, field-level
flexible versions, zeroCopy, entity types."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator
from typing import Any

from ..errors import SpecError
from .model import ENTITY_TYPES, FieldInfo, INT_RANGES, SpecModel, VersionRange, _BASE64URL, _DEC_INT, _FLOAT, _HEX_INT, flag
from .structure import _nullable_type


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
