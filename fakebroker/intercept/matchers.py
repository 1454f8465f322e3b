"""Matchers: comparing a message with what a transcript expects, allowing for what
legitimately varies between runs (generated member ids, throttle times, list order).

A transcript event may carry ``match``: a map from field paths of its body to matchers.
Paths use the spec's field names: ``MemberId``, ``Members[0].MemberId``, ``Members[*].MemberId``
(``[*]``: every element). A matcher is an object:

    {"any": true}                       anything
    {"capture": "m1", "pattern": "^w1-"} bind on first sight (optionally checking a regex),
                                        afterwards equal to the bound value
    {"ref": "m1"}                       equal to the bound value
    {"format": "Group {g} not found."}  equal to the template filled with bound values
    {"pattern": "^/"}                   a string the regex matches (unanchored, as in JSON
                                        Schema: anchor with ^ and $)
    {"min": 0, "max": 100}              a number in range
    {"unordered": true}                 an array compared as a multiset
    {"contains": true}                  an array holding every expected element (and more)
    {"contains": true, "each": {"GroupState": {"pattern": "^Stable$"}}}
                                        ... and every element, expected or not, has fields
                                        matching these (sub-path -> matcher or literal)
    {"ref": "generation.g1", "plus": 1} the bound number plus 1 (a generation after the one
                                        captured; sent as such in a request)
    {"unpinned": true}                  no requirement pins this field (nor anything under
                                        it): it is compared, but a difference is a note
                                        ("differs from the recording"), never a failure;
                                        combines with the other keys

Every field of an expected message is pinned unless its matcher (or one of a containing
field) says ``unpinned``: ``compare_all`` returns the differences of pinned fields apart from
the notes on unpinned ones, every one of them, not only the first.

The same matchers drive both directions: ``compare`` checks a message received against the
expected one (binding captures), ``play`` turns an expected message into the one to send
(substituting bound values for ``ref`` and ``format``, binding ``capture`` to what is sent).
Pure functions over JSON values; bindings are a plain dict the caller keeps per run.
"""

from __future__ import annotations

import math
import re
import string
from dataclasses import dataclass
from typing import Any

Match = dict[str, dict[str, Any]]
Bindings = dict[str, Any]

_SEGMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)((?:\[(?:\*|[0-9]+)\])*)")
_INDEX = re.compile(r"\[(\*|[0-9]+)\]")
_SCALAR_KEYS = ("capture", "ref", "plus", "format", "pattern", "min", "max")
MATCHER_KEYS = frozenset(("any", "unordered", "contains", "each", "unpinned") + _SCALAR_KEYS)


@dataclass(frozen=True)
class Divergence:
    """A place where a message differs from its expectation."""

    path: str  # field path in the body; "" is the whole body
    expected: Any
    actual: Any
    reason: str
    pinned: bool = True  # False: a field no requirement pins (a note, not a failure)

    def __str__(self) -> str:
        return (f"{self.path or '<body>'}: {self.reason}: expected {render_field(self.path, self.expected)}, "
                f"got {render_field(self.path, self.actual)}")


_MISSING = object()


def render(v: Any, limit: int = 200) -> str:
    if v is _MISSING:
        return "<absent>"
    import json
    text = json.dumps(v, ensure_ascii=False, sort_keys=False) if not isinstance(v, Pattern) else str(v)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def render_field(path: str, v: Any) -> str:
    """``render``, but an error code field's number is read by name: ``FENCED_MEMBER_EPOCH (110)``."""
    if path.endswith("ErrorCode") and isinstance(v, int) and not isinstance(v, bool):
        from ..coordinator.errors import DraftErrorCode
        from ..protocol.error_codes import error_text
        return error_text(v, {e.name: e.value for e in DraftErrorCode})
    return render(v)


class Pattern(str):
    """How an expectation that is a matcher prints in a report."""


# ---------------------------------------------------------------------------- paths

def parse_path(path: str) -> list[str | int]:
    """``A.B[0].C[*]`` -> ["A", "B", 0, "C", "*"]; raises ValueError when malformed."""
    if path == "":
        return []
    out: list[str | int] = []
    for part in path.split("."):
        m = _SEGMENT.fullmatch(part)
        if m is None:
            raise ValueError(f"malformed field path {path!r} at {part!r}")
        out.append(m.group(1))
        for idx in _INDEX.findall(m.group(2)):
            out.append("*" if idx == "*" else int(idx))
    return out


def join_path(parts: list[str | int]) -> str:
    out = ""
    for p in parts:
        if isinstance(p, int) or p == "*":
            out += f"[{p}]"
        else:
            out += f".{p}" if out else p
    return out


def wildcard(path: str) -> str:
    """The path with every index replaced by ``*``."""
    return _INDEX.sub("[*]", path)


def get_path(obj: Any, path: str) -> Any:
    """The value at a concrete path; KeyError (with the path) when absent."""
    node = obj
    for p in parse_path(path):
        if isinstance(p, int):
            if not isinstance(node, list) or p >= len(node):
                raise KeyError(path)
            node = node[p]
        elif p == "*":
            raise KeyError(f"{path}: [*] names many values")
        else:
            if not isinstance(node, dict) or p not in node:
                raise KeyError(path)
            node = node[p]
    return node


def lookup(match: Match, path: str) -> dict[str, Any] | None:
    """The matcher for a concrete path: an exact entry first, then its wildcard form."""
    if not match:
        return None
    m = match.get(path)
    if m is None and "[" in path:
        m = match.get(wildcard(path))
    return m


def matcher_problems(m: Any) -> list[str]:
    """Why a matcher object is not valid (empty when it is)."""
    if not isinstance(m, dict) or not m:
        return ["a matcher is a non-empty object"]
    out = [f"unknown matcher key {k!r}" for k in m if k not in MATCHER_KEYS]
    if "any" in m and len(set(m) - {"unpinned"}) > 1:
        out.append("'any' takes no other keys")
    if "unordered" in m and "contains" in m:
        out.append("'unordered' and 'contains' exclude each other")
    if ("unordered" in m or "contains" in m) and any(k in m for k in _SCALAR_KEYS):
        out.append("array matchers take no scalar keys")
    if "each" in m:
        if not ("unordered" in m or "contains" in m):
            out.append("'each' needs 'unordered' or 'contains'")
        if not isinstance(m["each"], dict):
            out.append("'each' maps element paths to matchers")
        else:
            for sub, inner in m["each"].items():
                try:
                    parse_path(sub)
                except ValueError as e:
                    out.append(str(e))
                if isinstance(inner, dict):
                    out += [f"each {sub}: {p}" for p in matcher_problems(inner)]
    if "ref" in m and "capture" in m:
        out.append("'ref' and 'capture' exclude each other")
    if "plus" in m and ("ref" not in m or isinstance(m["plus"], bool) or not isinstance(m["plus"], int)):
        out.append("'plus' is an integer added to a 'ref'")
    if "unpinned" in m and m["unpinned"] is not True:
        out.append("'unpinned' is true or absent")
    if "pattern" in m:
        try:
            re.compile(m["pattern"])
        except (re.error, TypeError) as e:
            out.append(f"pattern {m['pattern']!r} is not a regular expression: {e}")
    if "format" in m:
        try:
            names = [f for _, f, _, _ in string.Formatter().parse(str(m["format"])) if f is not None]
        except ValueError as e:
            out.append(f"format {m['format']!r}: {e}")
        else:
            out += [f"format field {{{n}}} is not a plain name" for n in names if not n.isidentifier()
                    and not re.fullmatch(r"[A-Za-z_][\w.]*", n)]
    for bound in ("min", "max"):  # NaN compares false both ways: it would match everything
        if isinstance(m.get(bound), float) and not math.isfinite(m[bound]):
            out.append(f"{bound} {m[bound]!r} is not a finite number")
    if "min" in m and "max" in m and isinstance(m["min"], (int, float)) \
            and isinstance(m["max"], (int, float)) and m["min"] > m["max"]:
        out.append("min exceeds max")
    return out


def fill(template: str, bindings: Bindings) -> str:
    """A ``format`` template with bound values (names may contain dots)."""
    def sub(mo: re.Match[str]) -> str:
        name = mo.group(1)
        if name not in bindings:
            raise Unbound(name)
        return str(bindings[name])
    return re.sub(r"\{([A-Za-z_][\w.]*)\}", sub, template)


class Unbound(KeyError):
    """A ``ref`` or ``format`` names a value never captured."""


# ---------------------------------------------------------------------------- compare

def _same(a: Any, b: Any) -> bool:
    # JSON: true is not 1, 1.0 is 1.
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)


def check_value(m: dict[str, Any], actual: Any, bindings: Bindings) -> str | None:
    """A scalar matcher against a value: None if it matches, else the reason. Binds a
    capture only on success."""
    if "any" in m:
        return None
    if "ref" in m:
        name = m["ref"]
        if name not in bindings:
            return f"{name!r} was never captured"
        if not _same(bound(m, bindings), actual):
            return f"not the value captured as {name!r}" + (f" {m['plus']:+d}" if m.get("plus") else "")
    if "format" in m:
        try:
            want = fill(m["format"], bindings)
        except Unbound as e:
            return f"{e.args[0]!r} was never captured"
        if actual != want:
            return f"not {want!r}"
    if "pattern" in m:
        if not isinstance(actual, str) or re.search(m["pattern"], actual) is None:
            return f"does not match /{m['pattern']}/"
    if "min" in m or "max" in m:
        if isinstance(actual, bool) or not isinstance(actual, (int, float)):
            return "not a number"
        if "min" in m and actual < m["min"]:
            return f"below {m['min']}"
        if "max" in m and actual > m["max"]:
            return f"above {m['max']}"
    if "capture" in m:
        name = m["capture"]
        if name in bindings and not _same(bindings[name], actual):
            return f"not the value captured earlier as {name!r}"
        bindings[name] = actual
    return None


def bound(m: dict[str, Any], bindings: Bindings) -> Any:
    """The value a ``ref`` matcher stands for: the bound one, plus ``plus`` if given."""
    value = bindings[m["ref"]]
    return value + m["plus"] if m.get("plus") else value


def describe(m: dict[str, Any], bindings: Bindings) -> Pattern:
    """An expectation that is a matcher, as a report shows it."""
    if "ref" in m and m["ref"] in bindings:
        plus = f" {m['plus']:+d}" if m.get("plus") else ""
        return Pattern(f"{render(bound(m, bindings))} (captured as {m['ref']}{plus})")
    if "capture" in m and m["capture"] in bindings:
        return Pattern(f"{render(bindings[m['capture']])} (captured as {m['capture']})")
    parts = [f"{k}={render(v)}" for k, v in m.items() if k != "unpinned"]
    return Pattern("<" + ", ".join(parts) + ">")


def compare(expected: Any, actual: Any, match: Match | None, bindings: Bindings,
            path: str = "") -> Divergence | None:
    """The first difference of a pinned field (None: ``actual`` conforms). Captures are
    bound into ``bindings`` as they are met."""
    return next(iter(compare_all(expected, actual, match, bindings, path)[0]), None)


def compare_all(expected: Any, actual: Any, match: Match | None, bindings: Bindings,
                path: str = "") -> tuple[list[Divergence], list[Divergence]]:
    """Every difference of ``actual`` from ``expected``: (those of pinned fields, the notes
    on unpinned ones). Captures are bound into ``bindings`` as they are met."""
    out: list[Divergence] = []
    _walk(expected, actual, match or {}, bindings, path, True, out)
    return [d for d in out if d.pinned], [d for d in out if not d.pinned]


def _walk(expected: Any, actual: Any, match: Match, bindings: Bindings, path: str,
          pinned: bool, out: list[Divergence]) -> None:
    m = lookup(match, path) if path else match.get("")
    if m is not None and m.get("unpinned"):
        pinned = False

    def differ(where: str, want: Any, got: Any, reason: str) -> None:
        out.append(Divergence(where, want, got, reason, pinned))

    if m is not None and "any" in m:
        return
    if m is not None and any(k in m for k in _SCALAR_KEYS):
        reason = check_value(m, actual, bindings)
        if reason is not None:
            differ(path, describe(m, bindings), actual, reason)
        return
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return differ(path, expected, actual, "not an object")
        for k, v in expected.items():
            sub = f"{path}.{k}" if path else k
            if k not in actual:
                sm = lookup(match, sub)
                out.append(Divergence(sub, v, _MISSING, "field missing",
                                      pinned and not (sm is not None and sm.get("unpinned"))))
            else:
                _walk(v, actual[k], match, bindings, sub, pinned, out)
        for k in actual:
            if k not in expected:
                differ(f"{path}.{k}" if path else k, _MISSING, actual[k], "unexpected field")
        return
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return differ(path, expected, actual, "not an array")
        if m is not None and ("unordered" in m or "contains" in m):
            _walk_unordered(expected, actual, match, bindings, path, "contains" in m, pinned, out)
            _walk_each(m.get("each") or {}, actual, bindings, path, pinned, out)
            return
        for i, (e, a) in enumerate(zip(expected, actual)):
            _walk(e, a, match, bindings, f"{path}[{i}]", pinned, out)
        if len(expected) != len(actual):
            differ(path, f"{len(expected)} element(s)", f"{len(actual)} element(s)", "array length differs")
        return
    if not _same(expected, actual):
        differ(path, expected, actual, "values differ")


_NO_MATCH = "no element matches (order ignored)"


def _walk_unordered(expected: list[Any], actual: list[Any], match: Match, bindings: Bindings,
                    path: str, extra_ok: bool, pinned: bool, out: list[Divergence]) -> None:
    """Each expected element is matched to an actual one with no pinned difference (its
    notes kept); one that matches none is reported against the closest actual element, field
    by field."""
    if len(actual) < len(expected) or (not extra_ok and len(actual) != len(expected)):
        out.append(Divergence(path, f"{len(expected)} element(s)", f"{len(actual)} element(s)",
                              "array length differs", pinned))
    free = list(range(len(actual)))
    unmatched: list[int] = []
    for i, e in enumerate(expected):
        for j in free:
            trial, found = dict(bindings), []
            # The expected element's matchers apply, wherever its match sits in actual.
            _walk(e, actual[j], match, trial, f"{path}[{i}]", pinned, found)
            if not any(d.pinned for d in found):
                bindings.update(trial)
                out.extend(found)
                free.remove(j)
                break
        else:
            unmatched.append(i)
    for i in unmatched:
        tries = []
        for j in free:
            found: list[Divergence] = []
            _walk(expected[i], actual[j], match, dict(bindings), f"{path}[{i}]", pinned, found)
            tries.append((sum(d.pinned for d in found), j, found))
        if not tries:
            out.append(Divergence(f"{path}[{i}]", expected[i], _MISSING,
                                  f"{_NO_MATCH}: no actual element left", pinned))
            continue
        _, j, found = min(tries, key=lambda t: t[0])
        # Nested unordered arrays: the innermost closest element names the place.
        out.extend(d if d.reason.startswith(_NO_MATCH) else Divergence(
            d.path, d.expected, d.actual, f"{_NO_MATCH}; the closest, {path}[{j}], differs here: "
            f"{d.reason}", d.pinned) for d in found)


def _walk_each(each: dict[str, Any], actual: list[Any], bindings: Bindings, path: str,
               pinned: bool, out: list[Divergence]) -> None:
    for j, element in enumerate(actual):
        for sub, want in each.items():
            values = values_at(element, sub)
            where = f"{path}[{j}].{sub}"
            if not values:
                out.append(Divergence(where, want, _MISSING, "field missing", pinned))
                continue
            for v in values:
                reason = check_value(want, v, bindings) if isinstance(want, dict) else (
                    None if _same(want, v) else "values differ")
                if reason is not None:
                    shown = describe(want, bindings) if isinstance(want, dict) else want
                    out.append(Divergence(where, shown, v, reason, pinned))


# ---------------------------------------------------------------------------- play

def play(expected: Any, match: Match | None, bindings: Bindings, path: str = "") -> Any:
    """The message to send for an expected one: ``ref`` / ``format`` values substituted
    from ``bindings`` (Unbound if never captured), ``capture`` values bound."""
    match = match or {}
    m = lookup(match, path) if path else match.get("")
    if m is not None:
        if "ref" in m:
            name = m["ref"]
            if name not in bindings:
                raise Unbound(name)
            return bound(m, bindings)
        if "format" in m:
            return fill(m["format"], bindings)
        if "capture" in m:
            return bindings.setdefault(m["capture"], expected)
    if isinstance(expected, dict):
        return {k: play(v, match, bindings, f"{path}.{k}" if path else k) for k, v in expected.items()}
    if isinstance(expected, list):
        return [play(v, match, bindings, f"{path}[{i}]") for i, v in enumerate(expected)]
    return expected


# ---------------------------------------------------------------------------- specs

def spec_path_problem(struct: Any, path: str) -> str | None:
    """Why ``path`` names no field of a message spec (a StructSpec), or None."""
    try:
        parts = parse_path(path)
    except ValueError as e:
        return str(e)
    node: Any = struct
    kind = "struct"
    for p in parts:
        if isinstance(p, int) or p == "*":
            if kind != "array":
                return f"{path}: indexes a field that is not an array"
            elem = node
            kind = elem.kind
            node = elem.struct if elem.kind == "struct" else elem
            continue
        if kind != "struct":
            return f"{path}: {p!r} is inside a field that is not a struct"
        f = next((x for x in node.fields if x.name == p), None)
        if f is None:
            names = ", ".join(x.name for x in node.fields)
            return f"{path}: no field {p!r} in {node.name} (fields: {names})"
        kind = f.type.kind
        if kind == "array":
            node = f.type.element
        elif kind == "struct":
            node = f.type.struct
    return None


def set_path(obj: Any, path: str, value: Any) -> int:
    """Set the field at ``path`` (``[*]``: in every element); returns how many were set."""
    parts = parse_path(path)
    if not parts:
        raise ValueError("cannot set the whole body")

    def walk(node: Any, rest: list[str | int]) -> int:
        head, tail = rest[0], rest[1:]
        if head == "*":
            if not isinstance(node, list):
                return 0
            return sum(walk(x, tail) for x in node) if tail else _set_all(node, value)
        if isinstance(head, int):
            if not isinstance(node, list) or head >= len(node):
                return 0
            if not tail:
                node[head] = value
                return 1
            return walk(node[head], tail)
        if not isinstance(node, dict) or head not in node:
            return 0
        if not tail:
            node[head] = value
            return 1
        return walk(node[head], tail)

    return walk(obj, parts)


def _set_all(items: list[Any], value: Any) -> int:
    for i in range(len(items)):
        items[i] = value
    return len(items)


def values_at(obj: Any, path: str) -> list[Any]:
    """Every value a path names (``[*]`` expands); empty when the path is absent."""
    nodes = [obj]
    for p in parse_path(path):
        nxt: list[Any] = []
        for n in nodes:
            if p == "*":
                if isinstance(n, list):
                    nxt.extend(n)
            elif isinstance(p, int):
                if isinstance(n, list) and p < len(n):
                    nxt.append(n[p])
            elif isinstance(n, dict) and p in n:
                nxt.append(n[p])
        nodes = nxt
    return nodes
