"""Layer 1, the JSON Schema (schemas/message-spec.schema.json), and layer 2a, version
numbers: what runs before the model is built."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import SpecError

if TYPE_CHECKING:
    import jsonschema
from .model import MAX_VERSION, SCHEMA_PATH


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
