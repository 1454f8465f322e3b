"""Hypothesis strategies derived from message specs at run time.

``message_strategy(mt, version)`` walks a ``MessageType``'s spec and draws objects of
``mt.cls`` that are valid at ``version``: integers over the full range of their type
(with the bounds, -1, 0 and 1 drawn often), unicode strings (non-ASCII and non-BMP
included, some long enough to need a two-byte length varint), bytes, UUIDs (the zero
UUID included), nulls where the field is nullable at that version, empty, small and
large arrays, tagged fields both set and left at their default, and, in flexible
versions, unknown tagged fields (``_unknown_tags``, tags above every tag the struct
knows). Fields that do not exist at the version are left at their default. Nothing
here knows any API: a spec file a user adds gets strategies for free.

A ``Profile`` steers the draw so that a test can *guarantee* a shape rather than hope
for it: ``RANDOM`` mixes everything, ``MINIMAL`` makes every nullable field null,
leaves every tagged field unset and every array empty, ``MAXIMAL`` makes every
nullable field non-null, sets every tagged field, fills every array (arrays outside
any other array get 128+ elements) and puts non-BMP characters into every string.

The value-level building blocks (``int_values``, ``text_values``, ``array_values``,
``nullable``, ``tagged`` ...) are public so that tests driving another library's
schema model (tests/interop) draw values with the same rules and profiles.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from fakebroker.protocol.registry import MessageType
from fakebroker.protocol.spec import INT_RANGES, FieldSpec, StructSpec, TypeRef

ZERO_UUID = uuid.UUID(int=0)

#: An array outside any other array gets this many elements when drawn "large": its
#: compact length (n + 1) then needs a two-byte varint.
LARGE_ARRAY_SIZES = (128, 131)
#: Non-null strings and bytes sometimes get at least this many bytes (two-byte varint).
LONG_LENGTH = 128

# Strings that are always worth trying: empty, non-ASCII BMP, non-BMP, mixed scripts.
SPECIAL_STRINGS = ("", "é", "\U0001f600", "日本語", "a\U00010348b", "\u0000", "Ω≈ç√∫")
# What MAXIMAL appends to every string it draws: a 2-byte, a 3-byte and a 4-byte char.
UNICODE_SUFFIX = "é€\U0001f680"

#: Drawn for a tagged field left unset: the kwarg is not passed, the field keeps its default.
UNSET = object()


@dataclass(frozen=True)
class Profile:
    """How values are drawn. Every knob is "random" unless the profile forces it."""

    name: str
    nulls: str = "random"  # "random" | "always" | "never": fields nullable at the version
    tagged: str = "random"  # "random" | "set" | "unset": tagged fields at the version
    arrays: str = "random"  # "random" | "empty" | "full"
    unicode: bool = False  # force non-ASCII and non-BMP characters into every string
    unknown_tags: bool = True  # draw ``_unknown_tags`` in flexible versions

    def without_unknown_tags(self) -> Profile:
        return Profile(self.name, self.nulls, self.tagged, self.arrays, self.unicode, False)

    def __str__(self) -> str:
        return self.name


RANDOM = Profile("random")
MINIMAL = Profile("minimal", nulls="always", tagged="unset", arrays="empty", unknown_tags=False)
MAXIMAL = Profile("maximal", nulls="never", tagged="set", arrays="full", unicode=True)
PROFILES = (RANDOM, MINIMAL, MAXIMAL)


# ---------------------------------------------------------------- value building blocks

def int_values(lo: int, hi: int) -> st.SearchStrategy[int]:
    """Integers over [lo, hi] with the bounds and the small values around zero drawn often."""
    edges = sorted({v for v in (lo, hi, -1, 0, 1, lo + 1, hi - 1) if lo <= v <= hi})
    return st.one_of(st.sampled_from(edges), st.integers(lo, hi))


def int_type_values(kind: str) -> st.SearchStrategy[int]:
    lo, hi = INT_RANGES[kind]
    return int_values(lo, hi)


def float_values() -> st.SearchStrategy[float]:
    # NaN is left out: it is never equal to itself, so object equality cannot be checked.
    return st.floats(allow_nan=False, allow_infinity=True)


_CHARS = st.characters(codec="utf-8")  # every code point but the surrogates


def text_values(profile: Profile = RANDOM) -> st.SearchStrategy[str]:
    """Unicode strings: short random ones, special ones and long ones (>= 128 bytes)."""
    long = st.tuples(st.text(_CHARS, min_size=1, max_size=3), st.integers(0, 8)).map(
        lambda t: t[0] * (LONG_LENGTH // len(t[0].encode()) + t[1]))
    base = st.one_of(st.text(_CHARS, max_size=12), st.sampled_from(SPECIAL_STRINGS), long)
    if profile.unicode:
        return base.map(lambda s: s + UNICODE_SUFFIX)
    return base


def binary_values(profile: Profile = RANDOM) -> st.SearchStrategy[bytes]:
    long = st.tuples(st.binary(min_size=1, max_size=4), st.integers(0, 8)).map(
        lambda t: t[0] * (LONG_LENGTH // len(t[0]) + t[1]))
    base = st.one_of(st.binary(max_size=16), long)
    if profile.arrays == "full":  # MAXIMAL fills bytes as it fills arrays: never empty
        return st.one_of(st.binary(min_size=1, max_size=16), long)
    return base


def uuid_values() -> st.SearchStrategy[uuid.UUID]:
    return st.one_of(st.just(ZERO_UUID), st.uuids())


def primitive_values(kind: str, profile: Profile = RANDOM) -> st.SearchStrategy[Any]:
    """Non-null values of one of the spec's primitive types."""
    if kind in INT_RANGES:
        return int_type_values(kind)
    if kind == "bool":
        return st.booleans()
    if kind == "float64":
        return float_values()
    if kind == "string":
        return text_values(profile)
    if kind in ("bytes", "records"):
        return binary_values(profile)
    if kind == "uuid":
        return uuid_values()
    raise ValueError(f"not a primitive type: {kind}")


def nullable(base: st.SearchStrategy[Any], profile: Profile = RANDOM) -> st.SearchStrategy[Any]:
    """``base`` or None, as the profile says (for a field nullable at the version)."""
    if profile.nulls == "always":
        return st.none()
    if profile.nulls == "never":
        return base
    return st.one_of(st.none(), base)


def _repeat_to(items: list[Any], n: int) -> list[Any]:
    return [items[i % len(items)] for i in range(n)]


def array_values(element: st.SearchStrategy[Any], profile: Profile = RANDOM, *,
                 depth: int = 0, to_container: Callable[[list[Any]], Any] = list
                 ) -> st.SearchStrategy[Any]:
    """Arrays of ``element``: empty, small, or (outside any other array) large.

    A large array repeats a few drawn elements up to 128+ entries, so it costs little
    entropy and little time while still exercising two-byte length prefixes.
    ``depth`` counts the arrays around this one; only depth 0 may be large.
    """
    small = st.lists(element, min_size=1, max_size=3)
    large = st.tuples(st.lists(element, min_size=1, max_size=2),
                      st.integers(*LARGE_ARRAY_SIZES)).map(lambda t: _repeat_to(t[0], t[1]))
    if profile.arrays == "empty":
        out: st.SearchStrategy[Any] = st.just([])
    elif profile.arrays == "full":
        out = large if depth == 0 else small
    elif depth == 0:
        out = st.one_of(st.just([]), small, large)
    else:
        out = st.one_of(st.just([]), small)
    return out.map(to_container) if to_container is not list else out


def tagged(value: st.SearchStrategy[Any], default: Any, profile: Profile = RANDOM,
           *, unset: Any = UNSET, is_default: Callable[[Any], bool] | None = None
           ) -> st.SearchStrategy[Any]:
    """A tagged field: left unset (``unset``) or set. Profile "set" draws only values other
    than the default (``is_default`` decides when ``==`` is not the right test), so the
    field is really written; RANDOM draws either, the default included."""
    not_default = value.filter(lambda v: not (is_default(v) if is_default else v == default))
    if profile.tagged == "unset":
        return st.just(unset)
    if profile.tagged == "set":
        return not_default
    return st.one_of(st.just(unset), value)


def unknown_tags(min_tag: int, profile: Profile = RANDOM) -> st.SearchStrategy[dict[int, bytes] | None]:
    """Raw tagged fields with tags the struct does not know (all >= ``min_tag``)."""
    if not profile.unknown_tags:
        return st.none()
    tags = st.one_of(st.integers(min_tag, min_tag + 16), st.integers(min_tag, 2**31 - 1))
    values = st.one_of(st.binary(max_size=8), st.binary(min_size=LONG_LENGTH, max_size=LONG_LENGTH + 4))
    if profile.tagged == "set":
        return st.dictionaries(tags, values, min_size=1, max_size=2)
    return st.one_of(st.none(), st.dictionaries(tags, values, max_size=2))


# ---------------------------------------------------------------- spec walking

Path = tuple[str, ...]
Overrides = Mapping[Path, st.SearchStrategy[Any]]


def field_is_tagged(f: FieldSpec, version: int, flexible: bool) -> bool:
    return flexible and version in f.tagged_versions


def known_tags(s: StructSpec) -> set[int]:
    return {f.tag for f in s.fields if f.tag is not None}


class _Walker:
    def __init__(self, mt: MessageType, version: int, profile: Profile, overrides: Overrides) -> None:
        self.mt = mt
        self.version = version
        self.flexible = mt.is_flexible(version)
        self.profile = profile
        self.overrides = overrides

    def leaf(self, path: Path, kind: str) -> st.SearchStrategy[Any]:
        """A primitive value's strategy: the override for its path, or the type's own."""
        o = self.overrides.get(path)
        return o if o is not None else primitive_values(kind, self.profile)

    def struct(self, s: StructSpec, path: Path, depth: int) -> st.SearchStrategy[Any]:
        cls = self.mt.classes[s.name]
        kwargs: dict[str, st.SearchStrategy[Any]] = {}
        defaults = cls()
        for f in s.fields:
            if self.version not in f.versions:
                continue  # absent at this version: stays at its default
            fpath = path + (f.name,)
            value = self.field_value(f, f.type, fpath, depth)
            if field_is_tagged(f, self.version, self.flexible):
                value = tagged(value, getattr(defaults, f.attr), self.profile)
            kwargs[f.attr] = value
        if self.flexible:
            tags = known_tags(s)
            kwargs["_unknown_tags"] = unknown_tags(max(tags) + 1 if tags else 0, self.profile)
        return st.fixed_dictionaries(kwargs).map(
            lambda kw: cls(**{k: v for k, v in kw.items() if v is not UNSET}))

    def field_value(self, f: FieldSpec, t: TypeRef, path: Path, depth: int) -> st.SearchStrategy[Any]:
        """A field's value at the version, null included where it is nullable."""
        if t.kind == "array":
            assert t.element is not None
            el = t.element
            if el.kind == "struct":
                assert el.struct is not None
                elem = self.struct(el.struct, path, depth + 1)
            else:
                elem = self.leaf(path + ("[]",), el.kind)
            base = array_values(elem, self.profile, depth=depth)
        elif t.kind == "struct":
            assert t.struct is not None
            base = self.struct(t.struct, path, depth)
        else:
            base = self.leaf(path, t.kind)
        if self.version in f.nullable_versions and t.kind in ("string", "bytes", "records",
                                                               "array", "struct"):
            return nullable(base, self.profile)
        return base


_CACHE: dict[tuple[Any, ...], st.SearchStrategy[Any]] = {}


def message_strategy(mt: MessageType, version: int, profile: Profile = RANDOM,
                     overrides: Overrides | None = None) -> st.SearchStrategy[Any]:
    """Objects of ``mt.cls`` valid at ``version`` (see the module docstring).

    ``overrides`` maps a field path (spec field names from the message root, ``"[]"``
    for the elements of a primitive array) to the strategy of its non-null values;
    interop tests use it to keep values inside what another library can represent.
    """
    if not mt.supports(version):
        raise ValueError(f"{mt.name} has no version {version}")
    key = (id(mt), version, profile, tuple(sorted((overrides or {}).items(), key=lambda kv: kv[0])))
    s = _CACHE.get(key)
    if s is None:
        s = _CACHE[key] = _Walker(mt, version, profile, overrides or {}).struct(mt.spec.struct, (), 0)
    return s


def all_versions(mt: MessageType) -> list[int]:
    return list(range(mt.lowest, mt.highest + 1))


def first_flexible(mt: MessageType) -> int | None:
    """The lowest valid version that is flexible, or None."""
    return next((v for v in all_versions(mt) if mt.is_flexible(v)), None)


def key_versions(mt: MessageType) -> list[int]:
    """The lowest, the first flexible and the highest version (deduplicated, sorted)."""
    vs = {mt.lowest, mt.highest}
    ff = first_flexible(mt)
    if ff is not None:
        vs.add(ff)
    return sorted(vs)
