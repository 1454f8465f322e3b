"""API-specific error responses built from the specs, for any API and version.

Kafka answers a request it refuses with a response of that API in which every error code
is the refusal: at the top level, and per entry for APIs that answer per topic, partition,
group or member (``AbstractRequest.getErrorResponse``). Here the same shape is derived from
the spec instead of written per API: every ``ErrorCode`` field that exists in the version
is set, and every array of entries mirrors the request's matching array, copying the
entry's identifying fields (names, indexes, ids) so a client can tell which entry failed.
Everything else keeps the spec's defaults, which are valid in every version.
"""

from __future__ import annotations

import difflib
from typing import Any

from ..protocol import Registry, Struct
from ..protocol.error_codes import ErrorCode
from ..protocol.spec import FieldSpec, StructSpec

# Response arrays whose request counterpart has another name: (response, request) -> the
# response entry's field that receives a primitive request element (None: a struct).
_ALIASES: dict[str, tuple[str, str | None]] = {
    "Coordinators": ("CoordinatorKeys", "Key"),            # FindCoordinator v4+
    "Partitions": ("PartitionIndexes", "PartitionIndex"),  # OffsetFetch v0-7
    "Responses": ("Topics", None),                         # Fetch
    "PartitionResponses": ("PartitionData", None),         # Produce
}
_PRIMITIVE_KEYS = ("GroupId", "Key", "Name", "PartitionIndex", "MemberId")


def resolve_error(code: int | str) -> int:
    """An error code from its Kafka name (``REBALANCE_IN_PROGRESS``) or its number."""
    if isinstance(code, bool):
        raise ValueError(f"not an error code: {code!r}")
    if isinstance(code, int):
        if not -32768 <= code <= 32767:
            raise ValueError(f"error code {code} is not an int16")
        return code
    text = str(code).strip()
    if text.lstrip("-").isdigit():
        return resolve_error(int(text))
    try:
        return int(ErrorCode[text.upper()])
    except KeyError:
        close = difflib.get_close_matches(text.upper(), [e.name for e in ErrorCode], n=1)
        hint = f" (did you mean {close[0]}?)" if close else " (a Kafka error name or a number)"
        raise ValueError(f"unknown error name {code!r}{hint}") from None


def error_response(registry: Registry, api_key: int, version: int, request: Struct | None,
                   code: int | str, message: str | None = None) -> Struct:
    """The response to ``request`` (an ``api_key`` request at ``version``) with every
    ErrorCode set to ``code`` and, when given, every ErrorMessage to ``message``."""
    mt = registry.response(api_key)
    value = resolve_error(code)
    req_spec = registry.request(api_key).spec.struct if request is not None else None
    return _build(mt.spec.struct, mt.classes, version, req_spec, request, value, message)


def _build(spec: StructSpec, classes: dict[str, type[Struct]], version: int,
           req_spec: StructSpec | None, req: Any, code: int, message: str | None,
           top: bool = True) -> Struct:
    kwargs: dict[str, Any] = {}
    req_fields = {f.name: f for f in req_spec.fields if version in f.versions} if req_spec else {}
    for f in spec.fields:
        if version not in f.versions:
            continue
        if f.name == "ErrorCode" and f.type.kind == "int16":
            kwargs[f.attr] = code
        elif f.name == "ErrorMessage" and f.type.kind == "string" and message is not None:
            kwargs[f.attr] = message
        elif f.type.kind == "array" and f.type.element is not None \
                and f.type.element.kind == "struct" and req is not None:
            entries = _mirror(f, classes, version, req_fields, req, code, message)
            if entries is not None:
                kwargs[f.attr] = entries
        elif not top and f.type.kind not in ("array", "struct") and req is not None:
            # An entry's identity: the same-named field of the request entry it answers.
            rf = req_fields.get(f.name)
            if rf is not None and rf.type.kind == f.type.kind:
                kwargs[f.attr] = getattr(req, rf.attr)
    return classes[spec.name](**kwargs)


def _mirror(f: FieldSpec, classes: dict[str, type[Struct]], version: int,
            req_fields: dict[str, FieldSpec], req: Any, code: int,
            message: str | None) -> list[Struct] | None:
    """One response entry per element of the request array that ``f`` answers."""
    assert f.type.element is not None and f.type.element.struct is not None
    entry_spec = f.type.element.struct
    alias, key_field = _ALIASES.get(f.name, (f.name, None))
    rf = req_fields.get(f.name) or req_fields.get(alias)
    if rf is None or rf.type.kind != "array" or rf.type.element is None:
        return None
    elements = getattr(req, rf.attr)
    if elements is None:
        return None
    el = rf.type.element
    if el.kind == "struct":
        return [_build(entry_spec, classes, version, el.struct, e, code, message, top=False)
                for e in elements]
    target = _key_field(entry_spec, version, el.kind, key_field)
    if target is None:
        return None
    out = []
    for e in elements:
        entry = _build(entry_spec, classes, version, None, None, code, message, top=False)
        setattr(entry, target.attr, e)
        out.append(entry)
    return out


def _key_field(spec: StructSpec, version: int, kind: str, preferred: str | None) -> FieldSpec | None:
    present = [f for f in spec.fields if version in f.versions and f.type.kind == kind]
    for f in present:
        if f.name == preferred or f.map_key:
            return f
    for name in _PRIMITIVE_KEYS:
        for f in present:
            if f.name == name:
                return f
    return None
