"""Semantic rules over a message's keys, its fields' names and structs, and the versions a
field, a common struct or a nullable field lives in."""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import SpecError
from ..names import snake
from .model import FieldInfo, NULLABLE_PRIMITIVES, SpecModel, VersionRange, flag


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
