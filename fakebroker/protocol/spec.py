"""The in-memory model of a message spec (Apache Kafka's JSON message-spec format).

A spec file is checked (``spec_check``) and then turned into frozen dataclasses that
the compiler reads. Nothing here touches bytes.
"""

from __future__ import annotations

import base64
import json
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..parse_guard import InputLimit, loads_json
from . import spec_check
from .errors import SpecError
from .names import snake
from .spec_check import flag
from .spec_check.model import INT_RANGES, PRIMITIVES  # one table of types: the checker's

NULLABLE_KINDS = frozenset({"string", "bytes", "records", "array", "struct"})
ZERO_UUID = uuid.UUID(int=0)


@dataclass(frozen=True)
class Versions:
    """An inclusive version range; ``hi`` None means open-ended, ``lo`` None means none."""

    lo: int | None
    hi: int | None

    @staticmethod
    def parse(text: str) -> Versions:
        text = text.strip()
        if text == "none":
            return NONE
        if text.endswith("+"):
            return Versions(int(text[:-1]), None)
        if "-" in text:
            lo, hi = text.split("-", 1)
            return Versions(int(lo), int(hi))
        return Versions(int(text), int(text))

    def __contains__(self, version: int) -> bool:
        if self.lo is None:
            return False
        return self.lo <= version and (self.hi is None or version <= self.hi)

    @property
    def empty(self) -> bool:
        return self.lo is None

    def __str__(self) -> str:
        if self.lo is None:
            return "none"
        if self.hi is None:
            return f"{self.lo}+"
        return str(self.lo) if self.lo == self.hi else f"{self.lo}-{self.hi}"


NONE = Versions(None, None)


@dataclass(frozen=True)
class TypeRef:
    """A field's type: a primitive, an array of a type, or a struct."""

    kind: str  # a primitive name, "array" or "struct"
    element: TypeRef | None = None
    struct: StructSpec | None = None

    @property
    def name(self) -> str:
        if self.kind == "array":
            assert self.element is not None
            return "[]" + self.element.name
        if self.kind == "struct":
            assert self.struct is not None
            return self.struct.name
        return self.kind


@dataclass(frozen=True)
class FieldSpec:
    name: str
    attr: str  # the Python attribute: snake_case of ``name``
    type: TypeRef
    versions: Versions
    nullable_versions: Versions
    tagged_versions: Versions
    tag: int | None
    default: Any  # a Python value, or DEFAULT_FACTORY for a fresh list / struct
    ignorable: bool
    flexible_versions: Versions | None  # field-level override (strings and bytes)
    map_key: bool
    entity_type: str | None
    about: str


@dataclass(frozen=True)
class StructSpec:
    name: str
    fields: tuple[FieldSpec, ...] = field(default=())


@dataclass(frozen=True)
class MessageSpec:
    name: str
    type: str
    api_key: int | None
    valid_versions: Versions
    flexible_versions: Versions
    struct: StructSpec
    latest_version_unstable: bool
    file: str

    @property
    def lowest(self) -> int:
        assert self.valid_versions.lo is not None
        return self.valid_versions.lo

    @property
    def highest(self) -> int:
        assert self.valid_versions.hi is not None
        return self.valid_versions.hi

    def structs(self) -> list[StructSpec]:
        """Every struct of the message, outermost first, each once."""
        seen: dict[str, StructSpec] = {}

        def walk(s: StructSpec) -> None:
            if s.name in seen:
                return
            seen[s.name] = s
            for f in s.fields:
                t = f.type.element if f.type.kind == "array" else f.type
                if t is not None and t.kind == "struct" and t.struct is not None:
                    walk(t.struct)

        walk(self.struct)
        return list(seen.values())


class _Factory:
    """Marks a default that must be built fresh for every object (lists, structs)."""

    def __repr__(self) -> str:
        return "DEFAULT_FACTORY"


DEFAULT_FACTORY = _Factory()

def strip_comments(text: str) -> str:
    """Remove ``//`` line comments (Kafka's own spec files carry them) outside strings."""
    out: list[str] = []
    for line in text.splitlines():
        in_str = False
        esc = False
        for i, ch in enumerate(line):
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = not in_str
            elif ch == "/" and not in_str and line[i + 1 : i + 2] == "/":
                line = line[:i]
                break
        out.append(line)
    return "\n".join(out)


def read_spec_file(path: Path) -> dict[str, Any]:
    """Parse a spec file; a JSON syntax error is a SpecError naming line and column."""
    return parse_spec_bytes(path.read_bytes(), str(path))


def parse_spec_bytes(raw: bytes, file: str) -> dict[str, Any]:
    """Parse a spec file's bytes (``file`` names it in errors)."""
    try:
        doc = loads_json(strip_comments(raw.decode("utf-8")))
    except InputLimit as e:
        raise SpecError(file, "<file>", e.rule, e.message) from None
    except json.JSONDecodeError as e:
        raise SpecError(file, "<file>", "json-syntax",
                        f"line {e.lineno} column {e.colno}: {e.msg}") from None
    except UnicodeDecodeError as e:
        raise SpecError(file, "<file>", "json-syntax", f"not UTF-8: {e}") from None
    if not isinstance(doc, dict):
        raise SpecError(file, "<file>", "json-syntax", "the top level must be an object")
    return doc


def parse_default(type_name: str, raw: Any, nullable_always: bool) -> Any:
    """Turn a spec default into a Python value (checked earlier by spec_check)."""
    if type_name.startswith("[]"):
        return None if raw == "null" else DEFAULT_FACTORY
    if raw == "null" and nullable_always:
        return None
    if type_name in INT_RANGES or type_name == "float64":
        if raw is None or raw == "":
            return 0.0 if type_name == "float64" else 0
        if type_name == "float64":
            return float(raw)
        text = str(raw).strip().lower()
        return int(text, 16) if text.startswith(("0x", "-0x")) else int(text)
    if type_name == "bool":
        return raw is True or str(raw).lower() == "true"
    if type_name == "string":
        return "" if raw is None else str(raw)
    if type_name in ("bytes", "records"):
        return b""
    if type_name == "uuid":
        # Kafka writes UUID defaults in its base64 form (22 chars, no padding).
        return ZERO_UUID if raw in (None, "") else uuid.UUID(bytes=base64.urlsafe_b64decode(str(raw) + "=="))
    return DEFAULT_FACTORY  # a struct


class _Builder:
    """Builds the frozen model from a checked spec document."""

    def __init__(self, doc: dict[str, Any], file: str) -> None:
        self.file = file
        self.common: dict[str, dict[str, Any]] = {
            s["name"]: s for s in doc.get("commonStructs", [])
        }
        self.built: dict[str, StructSpec] = {}

    def struct(self, name: str, fields: list[dict[str, Any]]) -> StructSpec:
        if name in self.built:
            return self.built[name]
        spec = StructSpec(name, tuple(self.field(f) for f in fields))
        self.built[name] = spec
        return spec

    def type_ref(self, type_name: str, inline: list[dict[str, Any]] | None) -> TypeRef:
        if type_name.startswith("[]"):
            return TypeRef("array", element=self.type_ref(type_name[2:], inline))
        if type_name in PRIMITIVES:
            return TypeRef(type_name)
        fields = inline if inline is not None else self.common.get(type_name, {}).get("fields")
        if fields is None:
            raise SpecError(self.file, type_name, "struct-unresolved",
                            f"type {type_name} is neither defined inline nor in commonStructs")
        return TypeRef("struct", struct=self.struct(type_name, fields))

    def field(self, f: dict[str, Any]) -> FieldSpec:
        versions = Versions.parse(f["versions"])
        nullable = Versions.parse(f.get("nullableVersions", "none"))
        nullable_always = (not versions.empty and nullable.lo is not None
                           and nullable.lo <= versions.lo  # type: ignore[operator]
                           and (nullable.hi is None or (versions.hi is not None
                                                        and versions.hi <= nullable.hi)))
        flex = f.get("flexibleVersions")
        return FieldSpec(
            name=f["name"],
            attr=snake(f["name"]),
            type=self.type_ref(f["type"], f.get("fields")),
            versions=versions,
            nullable_versions=nullable,
            tagged_versions=Versions.parse(f.get("taggedVersions", "none")),
            tag=f.get("tag"),
            default=parse_default(f["type"], f.get("default"), nullable_always),
            ignorable=flag(f, "ignorable"),
            flexible_versions=Versions.parse(flex) if flex is not None else None,
            map_key=flag(f, "mapKey"),
            entity_type=f.get("entityType"),
            about=f.get("about", ""),
        )


def build_spec(doc: dict[str, Any], file: str, *, check: bool = True) -> MessageSpec:
    """Check a parsed spec document and build its model; raises SpecError. ``check=False``
    only for a document known to pass (``spec_verdicts``: the same bytes, the same checker)."""
    if check:
        spec_check.check_spec(doc, file)  # looked up here: a test counts the checks
    b = _Builder(doc, file)
    valid = Versions.parse(str(doc["validVersions"]))
    return MessageSpec(
        name=doc["name"],
        type=doc["type"],
        api_key=doc.get("apiKey"),
        valid_versions=valid,
        flexible_versions=Versions.parse(doc.get("flexibleVersions", "none")),
        struct=b.struct(doc["name"], doc.get("fields", [])),
        latest_version_unstable=flag(doc, "latestVersionUnstable"),
        file=file,
    )
