"""Message classes made from specs at run time.

Every struct of a spec becomes a class with ``__slots__`` named after the fields in
snake_case (``JoinGroupRequest.session_timeout_ms``). Nested struct classes hang off
the message class by their spec name (``JoinGroupRequest.JoinGroupRequestProtocol``).
Tagged fields a peer sent that the spec does not know stay in ``_unknown_tags``
(tag -> raw bytes) and are written back on encode.

The JSON form (``to_json`` / ``from_json``) uses the spec's field names, bytes as
lowercase hex and UUIDs as strings: the form of the CLI and of transcripts.
"""

from __future__ import annotations

import copy
import uuid
from typing import Any, ClassVar

from .spec import DEFAULT_FACTORY, INT_RANGES, FieldSpec, MessageSpec, StructSpec, TypeRef

_MISSING = object()


class Struct:
    """Base of every generated class. Subclasses set ``_spec_fields`` and ``__slots__``."""

    __slots__ = ("_unknown_tags",)
    _spec_fields: ClassVar[tuple[FieldSpec, ...]] = ()
    _struct_classes: ClassVar[dict[str, type[Struct]]] = {}
    _unknown_tags: dict[int, bytes] | None

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, f.attr) == getattr(other, f.attr) for f in self._spec_fields) and (
            (self._unknown_tags or None) == (other._unknown_tags or None)  # type: ignore[attr-defined]
        )

    def __repr__(self) -> str:
        inner = ", ".join(f"{f.attr}={getattr(self, f.attr)!r}" for f in self._spec_fields)
        return f"{type(self).__name__}({inner})"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {f.name: _value_to_json(f.type, getattr(self, f.attr))
                               for f in self._spec_fields}
        if self._unknown_tags:
            out["_unknownTaggedFields"] = {str(t): b.hex() for t, b in sorted(self._unknown_tags.items())}
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any], path: str = "") -> Struct:
        """Build an object from its JSON form; a bad key or value raises ValueError naming it."""
        if not isinstance(data, dict):
            raise ValueError(f"{path or cls.__name__}: expected an object, got {type(data).__name__}")
        known = {f.name: f for f in cls._spec_fields}
        kwargs: dict[str, Any] = {}
        for key, raw in data.items():
            where = f"{path}.{key}" if path else key
            if key == "_unknownTaggedFields":
                try:
                    kwargs["_unknown_tags"] = {int(t): bytes.fromhex(h) for t, h in raw.items()}
                except (AttributeError, ValueError, TypeError) as e:
                    raise ValueError(f"{where}: expected {{tag: hex}}: {e}") from None
                continue
            f = known.get(key)
            if f is None:
                raise ValueError(f"{where}: no field of that name in {cls.__name__} "
                                 f"(fields: {', '.join(known)})")
            kwargs[f.attr] = _value_from_json(f.type, raw, where, cls._struct_classes)
        return cls(**kwargs)


def sent_json(obj: Struct, version: int, flexible: bool) -> dict[str, Any]:
    """``obj``'s JSON form as encoding it at ``version`` writes it, i.e. what decoding those
    bytes gives back, without decoding: a field the version lacks (the encoder drops it: it
    is ignorable or at its default) reads as its default, and unknown tagged fields exist
    only in a ``flexible`` version."""
    if flexible and _complete(type(obj), version):
        return obj.to_json()  # every field is written: the object is what was sent
    defaults = _json_defaults(type(obj))
    out: dict[str, Any] = {}
    for f in obj._spec_fields:
        if version not in f.versions:
            d = defaults[f.name]
            out[f.name] = copy.deepcopy(d) if isinstance(d, (list, dict)) else d
            continue
        v = getattr(obj, f.attr)
        t = f.type
        if v is not None and t.kind == "struct":
            out[f.name] = sent_json(v, version, flexible)
        elif v is not None and t.kind == "array" and t.element is not None and t.element.kind == "struct":
            out[f.name] = [sent_json(e, version, flexible) for e in v]
        else:
            out[f.name] = _value_to_json(t, v)
    if flexible and obj._unknown_tags:
        out["_unknownTaggedFields"] = {str(t): b.hex() for t, b in sorted(obj._unknown_tags.items())}
    return out


_DEFAULTS: dict[type[Struct], dict[str, Any]] = {}
_COMPLETE: dict[tuple[type[Struct], int], bool] = {}


def _complete(cls: type[Struct], version: int) -> bool:
    """Every field of ``cls`` and of the structs it holds exists at ``version``."""
    done = _COMPLETE.get((cls, version))
    if done is None:
        done = True
        for f in cls._spec_fields:
            t = f.type.element if f.type.kind == "array" else f.type
            if version not in f.versions or (
                    t is not None and t.kind == "struct" and t.struct is not None
                    and not _complete(cls._struct_classes[t.struct.name], version)):
                done = False
                break
        _COMPLETE[(cls, version)] = done
    return done


def _json_defaults(cls: type[Struct]) -> dict[str, Any]:
    """Every field's default in JSON form (what a decoder fills in for a field its version
    lacks), per class."""
    d = _DEFAULTS.get(cls)
    if d is None:
        fresh = cls()
        d = _DEFAULTS[cls] = {f.name: _value_to_json(f.type, getattr(fresh, f.attr))
                              for f in cls._spec_fields}
    return d


def _value_to_json(t: TypeRef, v: Any) -> Any:
    if v is None:
        return None
    if t.kind == "array":
        assert t.element is not None
        return [_value_to_json(t.element, e) for e in v]
    if t.kind == "struct":
        return v.to_json()
    if t.kind in ("bytes", "records"):
        return bytes(v).hex()
    if t.kind == "uuid":
        return str(v)
    return v


def _value_from_json(t: TypeRef, raw: Any, where: str, classes: dict[str, type[Struct]]) -> Any:
    if raw is None:
        return None  # nullability is the encoder's rule to enforce, per version
    k = t.kind
    if k == "array":
        if not isinstance(raw, list):
            raise ValueError(f"{where}: expected an array, got {type(raw).__name__}")
        assert t.element is not None
        return [_value_from_json(t.element, e, f"{where}[{i}]", classes) for i, e in enumerate(raw)]
    if k == "struct":
        assert t.struct is not None
        return classes[t.struct.name].from_json(raw, where)
    if k in INT_RANGES:
        if isinstance(raw, bool) or not isinstance(raw, int):
            raise ValueError(f"{where}: expected an integer for {k}, got {raw!r}")
        lo, hi = INT_RANGES[k]
        if not lo <= raw <= hi:
            raise ValueError(f"{where}: {raw} is out of range for {k} [{lo}, {hi}]")
        return raw
    if k == "bool":
        if not isinstance(raw, bool):
            raise ValueError(f"{where}: expected true or false, got {raw!r}")
        return raw
    if k == "float64":
        if isinstance(raw, bool) or not isinstance(raw, (int, float)):
            raise ValueError(f"{where}: expected a number, got {raw!r}")
        return float(raw)
    if k == "string":
        if not isinstance(raw, str):
            raise ValueError(f"{where}: expected a string, got {raw!r}")
        return raw
    if k in ("bytes", "records"):
        try:
            return bytes.fromhex(raw)
        except (TypeError, ValueError):
            raise ValueError(f"{where}: expected hex bytes, got {raw!r}") from None
    if k == "uuid":
        try:
            return uuid.UUID(raw)
        except (TypeError, ValueError, AttributeError):
            raise ValueError(f"{where}: expected a UUID string, got {raw!r}") from None
    raise AssertionError(k)


def _default_expr(f: FieldSpec, consts: dict[str, Any]) -> str:
    """A Python expression for a field's default, fresh for mutable ones."""
    if f.default is DEFAULT_FACTORY:
        if f.type.kind == "array":
            return "[]"
        assert f.type.struct is not None
        return f"_C_{f.type.struct.name}()"
    name = f"_d_{f.attr}"
    consts[name] = f.default
    return name


def make_classes(spec: MessageSpec) -> dict[str, type[Struct]]:
    """One class per struct of the spec; the message's own class is ``classes[spec.name]``."""
    classes: dict[str, type[Struct]] = {}
    # Innermost first, so that a struct default can construct its field structs.
    for s in reversed(spec.structs()):
        classes[s.name] = _make_class(s, classes)
    top = classes[spec.name]
    for name, cls in classes.items():
        cls._struct_classes = classes
        if name != spec.name:
            setattr(top, name, cls)
    return classes


def _make_class(s: StructSpec, classes: dict[str, type[Struct]]) -> type[Struct]:
    consts: dict[str, Any] = {"_M": _MISSING}
    consts.update({f"_C_{n}": c for n, c in classes.items()})
    params, body = [], []
    for f in s.fields:
        d = _default_expr(f, consts)
        if d.startswith("_d_"):
            params.append(f"{f.attr}={d}")
            body.append(f"    self.{f.attr} = {f.attr}")
        else:
            params.append(f"{f.attr}=_M")
            body.append(f"    self.{f.attr} = {d} if {f.attr} is _M else {f.attr}")
    params.append("_unknown_tags=None")
    body.append("    self._unknown_tags = _unknown_tags")
    src = f"def __init__(self, {', '.join(params)}):\n" + "\n".join(body) + "\n"
    exec(compile(src, f"<init {s.name}>", "exec"), consts)
    ns: dict[str, Any] = {
        "__slots__": tuple(f.attr for f in s.fields),
        "__init__": consts["__init__"],
        "_spec_fields": s.fields,
        "__module__": "fakebroker.protocol.generated",
        "__qualname__": s.name,
    }
    return type(s.name, (Struct,), ns)
