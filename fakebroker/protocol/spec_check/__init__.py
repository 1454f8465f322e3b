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

from collections.abc import Callable, Iterator
from typing import Any

from ..errors import SpecError
from .model import MAX_VERSION, SCHEMA_PATH, SpecModel, VersionRange, _build_model, flag
from .schema import check_version_numbers, check_version_order, load_schema, schema_errors
from .structure import (check_common_struct_versions, check_coordinator_key_versions,
                        check_duplicate_field_names, check_field_attributes,
                        check_fields_on_non_struct, check_flexible_versions_open_ended,
                        check_nullable_type, check_nullable_within_versions,
                        check_request_only_keys, check_struct_definitions,
                        check_struct_recursion, check_valid_versions_closed,
                        check_versions_within_parent)
from .tags import (check_tag_pairing, check_tagged_map_key, check_tagged_nullable,
                   check_tagged_records, check_tagged_versions_flexible,
                   check_tagged_versions_open_ended, check_tagged_versions_subset,
                   check_tags_contiguous, check_tags_unique)
from .values import (check_defaults, check_entity_types, check_field_flexible_versions,
                     check_map_keys, check_null_defaults, check_zero_copy)

__all__ = [
    "MAX_VERSION", "RULES", "RULE_IDS", "SCHEMA_PATH", "SpecError", "VersionRange",
    "check_spec", "flag", "iter_spec_errors", "load_schema",
]

# Every rule id a SpecError from this package can carry, with what it means.
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
