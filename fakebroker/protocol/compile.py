"""Compiles a spec into Python encoders and decoders, one pair per (struct, version).

Interpreting a spec field by field costs a dispatch per field; generating straight-line
code per version lets CPython run one ``struct`` call for each run of fixed-width fields
and inline the common one-byte varints. Every check is explicit and raises DecodeError
with the field, the offset and the rule, so the generated code is as strict as it is fast.

Generated decoders have the signature ``(buf: bytes, pos: int) -> (value, pos)`` and read
to ``len(buf)``; encoders ``(obj, w: bytearray) -> None``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any, Callable

from .errors import DecodeError, EncodeError
from .messages import Struct
from .spec import DEFAULT_FACTORY, FieldSpec, MessageSpec, StructSpec, TypeRef

Decoder = Callable[[bytes, int], "tuple[Any, int]"]
Encoder = Callable[[Any, bytearray], None]

# Fixed-width primitives: struct format character and size.
FIXED = {
    "bool": ("?", 1), "int8": ("b", 1), "int16": ("h", 2), "int32": ("i", 4),
    "int64": ("q", 8), "uint16": ("H", 2), "uint32": ("I", 4), "float64": ("d", 8),
    "uuid": ("16s", 16),
}
# The fixed-width kinds an array of which is read or written in one struct call.
PACKED = frozenset(FIXED) - {"uuid"}

_U16 = struct.Struct(">h")
_U32 = struct.Struct(">i")


# ---------------------------------------------------------------- runtime helpers
# Called from generated code; kept small and shared.

def read_uvarint(buf: bytes, pos: int, path: str) -> tuple[int, int]:
    """An unsigned varint of at most 5 bytes (Kafka's limit for uint32 lengths)."""
    result = 0
    shift = 0
    start = pos
    end = len(buf)
    while True:
        if pos >= end:
            raise DecodeError(path, start, "truncated", "varint runs past the end of the frame")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            if result > 0xFFFFFFFF:
                raise DecodeError(path, start, "varint-too-long", "varint exceeds 32 bits")
            return result, pos
        shift += 7
        if shift >= 35:
            raise DecodeError(path, start, "varint-too-long", "varint longer than 5 bytes")


def write_uvarint(w: bytearray, n: int) -> None:
    while n >= 0x80:
        w.append((n & 0x7F) | 0x80)
        n >>= 7
    w.append(n)


def truncated(path: str, pos: int, need: int, end: int) -> DecodeError:
    return DecodeError(path, pos, "truncated",
                       f"needs {need} byte(s) but only {max(end - pos, 0)} remain")


def truncated_run(names: tuple[str, ...], sizes: tuple[int, ...], pos: int, end: int) -> DecodeError:
    """Name the first field of a merged fixed-width run that does not fit."""
    for name, size in zip(names, sizes):
        if pos + size > end:
            return truncated(name, pos, size, end)
        pos += size
    return truncated(names[-1], pos, 0, end)  # pragma: no cover - caller checked


def bad_length(path: str, pos: int, n: int, nullable: bool) -> DecodeError:
    if n == -1:
        return DecodeError(path, pos, "null-not-nullable", "null (-1) in a non-nullable field")
    return DecodeError(path, pos, "negative-length", f"length {n} is negative and not -1")


def past_end(path: str, pos: int, n: int, end: int) -> DecodeError:
    return DecodeError(path, pos, "length-past-end",
                       f"length {n} runs past the end of the frame ({end - pos} byte(s) remain)")


def bad_utf8(path: str, pos: int, e: UnicodeDecodeError) -> DecodeError:
    return DecodeError(path, pos + e.start, "invalid-utf8", f"string is not valid UTF-8: {e.reason}")


def read_tags(buf: bytes, pos: int, path: str) -> tuple[list[tuple[int, int, int]], int]:
    """The tagged-field section: [(tag, start, size)], tags strictly ascending."""
    end = len(buf)
    count, pos = read_uvarint(buf, pos, path + "<tagged fields>")
    out: list[tuple[int, int, int]] = []
    last = -1
    for _ in range(count):
        at = pos
        tag, pos = read_uvarint(buf, pos, path + "<tag>")
        if tag <= last:
            rule = "duplicate-tag" if tag == last else "descending-tags"
            raise DecodeError(path + f"<tag {tag}>", at, rule,
                              f"tag {tag} follows tag {last}; tags must be strictly ascending")
        last = tag
        size, pos = read_uvarint(buf, pos, path + f"<tag {tag} size>")
        if pos + size > end:
            raise past_end(path + f"<tag {tag}>", pos, size, end)
        out.append((tag, pos, size))
        pos += size
    return out, pos


def decode_tagged(dec: Decoder, buf: bytes, start: int, size: int, path: str) -> Any:
    """Decode one known tagged field from exactly its declared bytes."""
    sub = buf[start:start + size]
    try:
        value, used = dec(sub, 0)
    except DecodeError as e:
        # The value decoder's paths are relative to the value: "", "[3]..." or "Field...".
        e.path = path + e.path if e.path.startswith("[") else (f"{path}.{e.path}" if e.path else path)
        raise e.shift(start) from None
    if used != size:
        raise DecodeError(path, start + used, "tagged-field-size",
                          f"tagged field declared {size} byte(s) but its value used {used}")
    return value


def write_tags(w: bytearray, known: list[tuple[int, bytes]], unknown: dict[int, bytes] | None) -> None:
    merged = dict(unknown or {})
    merged.update(known)  # a tag the spec knows wins over a raw one of the same number
    write_uvarint(w, len(merged))
    for tag in sorted(merged):
        data = merged[tag]
        write_uvarint(w, tag)
        write_uvarint(w, len(data))
        w += data


def encode_failed(path: str, e: Exception) -> EncodeError:
    if isinstance(e, EncodeError):
        return e  # raised by the field's own encoder, which names the field already
    return EncodeError(path, "invalid-value", f"{type(e).__name__}: {e}")


def run_failed(o: Any, attrs: tuple[str, ...], names: tuple[str, ...], fmts: tuple[str, ...],
               e: Exception) -> EncodeError:
    """Name the field of a merged fixed-width run whose value cannot be packed."""
    for attr, name, fmt in zip(attrs, names, fmts):
        try:
            v = getattr(o, attr)
            struct.pack(">" + fmt, v.bytes if fmt == "16s" else v)
        except Exception as x:  # noqa: BLE001 - any failure here is this field's fault
            return EncodeError(name, "invalid-value", f"{type(x).__name__}: {x}")
    return EncodeError("/".join(names), "invalid-value", f"{type(e).__name__}: {e}")


def not_in_version(path: str, version: int) -> EncodeError:
    return EncodeError(path, "field-not-in-version",
                       f"has a non-default value but does not exist in version {version}")


def null_not_nullable(path: str, version: int) -> EncodeError:
    return EncodeError(path, "null-not-nullable", f"is None but not nullable in version {version}")


def too_long(path: str, n: int, limit: int) -> EncodeError:
    return EncodeError(path, "too-long", f"length {n} exceeds the limit {limit} of its encoding")


HELPERS: dict[str, Any] = {
    "_uv": read_uvarint, "_wuv": write_uvarint, "_T": truncated, "_TR": truncated_run,
    "_BL": bad_length, "_PE": past_end, "_U8": bad_utf8, "_RT": read_tags, "_DT": decode_tagged,
    "_WT": write_tags, "_EF": encode_failed, "_RF": run_failed, "_NV": not_in_version, "_NN": null_not_nullable,
    "_TL": too_long, "_DE": DecodeError, "_EE": EncodeError, "_u16": _U16, "_u32": _U32,
    "_unpack": struct.unpack_from, "_pack": struct.pack, "_UUID": __import__("uuid").UUID,
    "_UDE": UnicodeDecodeError, "_new": object.__new__,
}


# ---------------------------------------------------------------- the generator

def fixed_runs(fields: list[FieldSpec]) -> Iterator[tuple[list[FieldSpec], bool]]:
    """The fields in order: each run of consecutive fixed-width ones together, read or written
    in one struct call (True), any other alone (False)."""
    run: list[FieldSpec] = []
    for f in fields:
        if f.type.kind in FIXED:
            run.append(f)
            continue
        if run:
            yield run, True
            run = []
        yield [f], False
    if run:
        yield run, True


class _Gen:
    """Generates the code of one message at one version."""

    def __init__(self, spec: MessageSpec, version: int, classes: dict[str, type[Struct]]) -> None:
        self.spec = spec
        self.version = version
        self.flexible = version in spec.flexible_versions
        self.ns: dict[str, Any] = dict(HELPERS)
        self.ns.update({f"_C_{n}": c for n, c in classes.items()})
        self.src: list[str] = []
        self.counter = 0

    def name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def const(self, value: Any) -> str:
        n = self.name("_k")
        self.ns[n] = value
        return n

    # -- field classification at this version

    def present(self, s: StructSpec) -> tuple[list[FieldSpec], list[FieldSpec], list[FieldSpec]]:
        v = self.version
        regular, tagged, absent = [], [], []
        for f in s.fields:
            if v not in f.versions:
                absent.append(f)
            elif self.flexible and v in f.tagged_versions:
                tagged.append(f)
            else:
                regular.append(f)
        tagged.sort(key=lambda f: f.tag if f.tag is not None else -1)
        return regular, tagged, absent

    def compact(self, f: FieldSpec) -> bool:
        if f.flexible_versions is not None:
            return self.version in f.flexible_versions
        return self.flexible

    def nullable(self, f: FieldSpec) -> bool:
        return self.version in f.nullable_versions

    # -- decoding

    def decode_value(self, t: TypeRef, f: FieldSpec, target: str, ind: str, path: str,
                     element: bool = False) -> list[str]:
        """Lines that read one value of type ``t`` into ``target`` (pos advances).

        ``element``: an array element, which is never nullable whatever the field says.
        """
        k = t.kind
        out: list[str] = []
        p = repr(path)
        if k in FIXED:
            fmt, size = FIXED[k]
            s = self.const(struct.Struct(">" + fmt))
            out += [f"{ind}if pos + {size} > end: raise _T({p}, pos, {size}, end)",
                    f"{ind}{target}, = {s}.unpack_from(buf, pos); pos += {size}"]
            if k == "uuid":
                out.append(f"{ind}{target} = _UUID(bytes={target})")
            return out
        if k in ("string", "bytes", "records"):
            nullable = self.nullable(f) and not element
            out += self.read_length(f, k, ind, p, nullable)
            if nullable:
                out.append(f"{ind}if n < 0: {target} = None")
                out.append(f"{ind}else:")
                i2 = ind + "    "
            else:  # read_length has rejected n < 0 already
                i2 = ind
            out.append(f"{i2}e = pos + n")
            out.append(f"{i2}if e > end: raise _PE({p}, pos, n, end)")
            if k == "string":
                out.append(f"{i2}try: {target} = buf[pos:e].decode()")  # strict UTF-8; beats str(b, enc)
                out.append(f"{i2}except _UDE as x: raise _U8({p}, pos, x) from None")
            else:
                out.append(f"{i2}{target} = buf[pos:e]")
            out.append(f"{i2}pos = e")
            return out
        if k == "array":
            assert t.element is not None
            nullable = self.nullable(f)
            out += self.read_length(f, k, ind, p, nullable, array=True)
            out.append(f"{ind}if n < 0: {target} = None")
            el = t.element
            if el.kind in PACKED:
                fmt, size = FIXED[el.kind]
                out.append(f"{ind}elif pos + n * {size} > end: raise _PE({p}, pos, n, end)")
                out.append(f"{ind}else: {target} = list(_unpack('>%d{fmt}' % n, buf, pos)); pos += n * {size}")
                return out
            out.append(f"{ind}elif n > end - pos: raise _PE({p}, pos, n, end)")
            out.append(f"{ind}else:")
            i2 = ind + "    "
            lst = self.name("l")
            out.append(f"{i2}{lst} = []")
            idx = self.name("i")
            out.append(f"{i2}for {idx} in range(n):")
            i3 = i2 + "    "
            out += self.element(el, i3, p, idx, "_DE",
                                lambda s: f"x, pos = {self.struct_decoder(s)}(buf, pos)",
                                lambda i4: self.decode_value(el, f, "x", i4, "", element=True))
            out.append(f"{i3}{lst}.append(x)")
            out.append(f"{i2}{target} = {lst}")
            return out
        if k == "struct":
            assert t.struct is not None
            fn = self.struct_decoder(t.struct)
            if self.nullable(f):
                out += [f"{ind}if pos + 1 > end: raise _T({p}, pos, 1, end)",
                        f"{ind}if buf[pos] >= 128: {target} = None; pos += 1",
                        f"{ind}else:",
                        f"{ind}    try: {target}, pos = {fn}(buf, pos + 1)",
                        f"{ind}    except _DE as e: raise {f'e.prepend({p})' if path else 'e'} from None"]
            elif path:
                out += [f"{ind}try: {target}, pos = {fn}(buf, pos)",
                        f"{ind}except _DE as e: raise e.prepend({p}) from None"]
            else:  # a tagged field's value: decode_tagged names it
                out.append(f"{ind}{target}, pos = {fn}(buf, pos)")
            return out
        raise AssertionError(k)

    def element(self, el: TypeRef, ind: str, p: str, idx: str, error: str,
                struct_call: Callable[[StructSpec], str],
                value: Callable[[str], list[str]]) -> list[str]:
        """An array element's code (a struct's call, else ``value(indent)``'s lines) in a
        ``try`` whose ``error`` is prefixed with the element's path, ``p[idx]``."""
        catch = f"{ind}except {error} as e: raise e.prepend('%s[%d]' % ({p}, {idx})) from None"
        if el.kind == "struct":
            assert el.struct is not None
            return [f"{ind}try: {struct_call(el.struct)}", catch]
        return [f"{ind}try:", *value(ind + "    "), catch]

    def read_length(self, f: FieldSpec, kind: str, ind: str, p: str, nullable: bool,
                    array: bool = False) -> list[str]:
        """Read a length into ``n`` (-1 = null), enforcing nullability and sign."""
        if self.compact(f) or (array and self.flexible):
            lines = [f"{ind}if pos >= end: raise _T({p}, pos, 1, end)",
                     f"{ind}n = buf[pos]",
                     f"{ind}if n < 128: pos += 1",
                     f"{ind}else: n, pos = _uv(buf, pos, {p})",
                     f"{ind}n -= 1"]
            if not nullable:
                lines.append(f"{ind}if n < 0: raise _BL({p}, pos - 1, -1, False)")
            return lines
        wide = array or kind in ("bytes", "records")
        size, s = (4, "_u32") if wide else (2, "_u16")
        lines = [f"{ind}if pos + {size} > end: raise _T({p}, pos, {size}, end)",
                 f"{ind}n, = {s}.unpack_from(buf, pos); pos += {size}"]
        if nullable:
            lines.append(f"{ind}if n < -1: raise _BL({p}, pos - {size}, n, True)")
        else:
            lines.append(f"{ind}if n < 0: raise _BL({p}, pos - {size}, n, False)")
        return lines

    def struct_decoder(self, s: StructSpec) -> str:
        fn = f"_d_{s.name}"
        if fn in self.ns or any(line.startswith(f"def {fn}(") for line in self.src):
            return fn
        self.ns[fn] = None  # reserve the name (a struct never contains itself)
        regular, tagged, absent = self.present(s)
        body: list[str] = ["    end = len(buf)"]
        ind = "    "
        values: dict[str, str] = {}

        def unpack(run: list[FieldSpec]) -> list[str]:
            fmt = ">" + "".join(FIXED[f.type.kind][0] for f in run)
            size = sum(FIXED[f.type.kind][1] for f in run)
            names = tuple(f.name for f in run)
            sizes = tuple(FIXED[f.type.kind][1] for f in run)
            st = self.const(struct.Struct(fmt))
            targets = [f"v_{f.attr}" for f in run]
            return [f"{ind}if pos + {size} > end: raise _TR({self.const(names)}, {self.const(sizes)}, pos, end)",
                    f"{ind}{', '.join(targets)}, = {st}.unpack_from(buf, pos); pos += {size}",
                    *(f"{ind}v_{f.attr} = _UUID(bytes=v_{f.attr})" for f in run if f.type.kind == "uuid")]

        for run, packed in fixed_runs(regular):
            body += unpack(run) if packed else self.decode_value(run[0].type, run[0], f"v_{run[0].attr}", ind, run[0].name)
        values.update((f.attr, f"v_{f.attr}") for f in regular)
        for f in tagged:
            body.append(f"{ind}v_{f.attr} = {self.default_expr(f)}")
            values[f.attr] = f"v_{f.attr}"
        unknown = "None"
        if self.flexible:
            unknown = "u"
            body.append(f"{ind}u = None")
            body.append(f"{ind}if pos >= end: raise _T('<tagged fields>', pos, 1, end)")
            body.append(f"{ind}if buf[pos] == 0: pos += 1")
            body.append(f"{ind}else:")
            body.append(f"{ind}    tags, pos = _RT(buf, pos, '')")
            body.append(f"{ind}    for tag, start, size in tags:")
            first = True
            for f in tagged:
                vd = self.value_decoder(f)
                kw = "if" if first else "elif"
                first = False
                body.append(f"{ind}        {kw} tag == {f.tag}: v_{f.attr} = _DT({vd}, buf, start, size, {f.name!r})")
            body.append(f"{ind}        {'else' if tagged else 'if True'}:")
            body.append(f"{ind}            if u is None: u = {{}}")
            body.append(f"{ind}            u[tag] = buf[start:start + size]")
        for f in absent:
            values[f.attr] = self.default_expr(f)
        # Fill the slots directly (the class's __init__ only assigns them): cheaper than a
        # keyword call through type.__call__, which was a large share of small structs' cost.
        body.append(f"{ind}o = _new(_C_{s.name})")
        body += [f"{ind}o.{f.attr} = {values[f.attr]}" for f in s.fields]
        body.append(f"{ind}o._unknown_tags = {unknown}")
        body.append(f"{ind}return o, pos")
        self.src.append(f"def {fn}(buf, pos):\n" + "\n".join(body) + "\n")
        del self.ns[fn]
        return fn

    def value_decoder(self, f: FieldSpec) -> str:
        """A stand-alone decoder for one field's value (used for tagged fields)."""
        fn = self.name(f"_dv_{f.attr}_")
        lines = ["    end = len(buf)"] + self.decode_value(f.type, f, "v", "    ", "")
        self.src.append(f"def {fn}(buf, pos):\n" + "\n".join(lines) + "\n    return v, pos\n")
        return fn

    def default_expr(self, f: FieldSpec) -> str:
        if f.default is DEFAULT_FACTORY:
            if f.type.kind == "array":
                return "[]"
            assert f.type.struct is not None
            return f"_C_{f.type.struct.name}()"
        return self.const(f.default)

    # -- encoding

    def encode_value(self, t: TypeRef, f: FieldSpec, src: str, ind: str, path: str,
                     element: bool = False) -> list[str]:
        """Lines that append the encoding of ``src`` (an expression) to ``w``."""
        k = t.kind
        p = repr(path)
        out: list[str] = []
        if k in FIXED:
            fmt, _ = FIXED[k]
            s = self.const(struct.Struct(">" + fmt))
            arg = f"{src}.bytes" if k == "uuid" else src
            out.append(f"{ind}w += {s}.pack({arg})")
            return out
        if k in ("string", "bytes", "records", "array"):
            nullable = self.nullable(f) and not element
            compact = self.compact(f) or (k == "array" and self.flexible)
            if not src.isidentifier():  # read an attribute once, into a local
                v = self.name("s")
                out.append(f"{ind}{v} = {src}")
                src = v
            out.append(f"{ind}if {src} is None:")
            if nullable:
                null = b"\x00" if compact else (b"\xff\xff" if k == "string" else b"\xff\xff\xff\xff")
                out.append(f"{ind}    w += {null!r}")
            else:
                out.append(f"{ind}    raise _NN({p}, {self.version})")
            out.append(f"{ind}else:")
            i2 = ind + "    "
            if k == "string":
                out.append(f"{i2}b = {src}.encode()")  # str.encode() is strict UTF-8
                data = "b"
            else:
                data = None if k == "array" else src
            if compact:
                out.append(f"{i2}m = len({data or src}) + 1")
                out.append(f"{i2}if m < 128: w.append(m)")
                out.append(f"{i2}else: _wuv(w, m)")
                n = "(m - 1)"
            else:
                n = "n"
                out.append(f"{i2}n = len({data or src})")
                if k == "string":
                    out.append(f"{i2}if n > 32767: raise _TL({p}, n, 32767)")
                    out.append(f"{i2}w += _u16.pack(n)")
                else:
                    out.append(f"{i2}w += _u32.pack(n)")
            if data is not None:
                out.append(f"{i2}w += {data}")
                return out
            assert t.element is not None
            el = t.element
            if el.kind in PACKED:
                fmt = FIXED[el.kind][0]
                out.append(f"{i2}w += _pack('>%d{fmt}' % {n}, *{src})")
                return out
            idx = self.name("i")
            x = self.name("x")
            out.append(f"{i2}for {idx}, {x} in enumerate({src}):")
            i3 = i2 + "    "
            out += self.element(el, i3, p, idx, "_EE", lambda s: f"{self.struct_encoder(s)}({x}, w)",
                                lambda i4: self.encode_value(el, f, x, i4, "", element=True))
            return out
        if k == "struct":
            assert t.struct is not None
            fn = self.struct_encoder(t.struct)
            if self.nullable(f):
                out.append(f"{ind}if {src} is None: w.append(255)")
                out.append(f"{ind}else:")
                out.append(f"{ind}    w.append(1)")
                out.append(f"{ind}    try: {fn}({src}, w)")
                out.append(f"{ind}    except _EE as e: raise e.prepend({p}) from None")
            else:
                out.append(f"{ind}if {src} is None: raise _NN({p}, {self.version})")
                out.append(f"{ind}try: {fn}({src}, w)")
                out.append(f"{ind}except _EE as e: raise e.prepend({p}) from None")
            return out
        raise AssertionError(k)

    def struct_encoder(self, s: StructSpec) -> str:
        fn = f"_e_{s.name}"
        if fn in self.ns or any(line.startswith(f"def {fn}(") for line in self.src):
            return fn
        self.ns[fn] = None
        regular, tagged, absent = self.present(s)
        body: list[str] = []
        ind = "    "

        def pack(run: list[FieldSpec]) -> list[str]:
            fmt = ">" + "".join(FIXED[f.type.kind][0] for f in run)
            st = self.const(struct.Struct(fmt))
            args = ", ".join(f"o.{f.attr}.bytes" if f.type.kind == "uuid" else f"o.{f.attr}" for f in run)
            info = ", ".join(self.const(tuple(getattr(f, a) for f in run)) for a in ("attr", "name"))
            fmts = self.const(tuple(FIXED[f.type.kind][0] for f in run))
            return [f"{ind}try: w += {st}.pack({args})",
                    f"{ind}except Exception as e: raise _RF(o, {info}, {fmts}, e) from None"]

        def one(f: FieldSpec) -> list[str]:
            return [f"{ind}try:", *self.encode_value(f.type, f, f"o.{f.attr}", ind + "    ", f.name),
                    f"{ind}except Exception as e: raise _EF({f.name!r}, e) from None"]

        for run, packed in fixed_runs(regular):
            body += pack(run) if packed else one(run[0])
        for f in absent:
            if f.ignorable:
                continue
            if f.default is DEFAULT_FACTORY and f.type.kind == "array":
                body.append(f"{ind}if o.{f.attr}: raise _NV({f.name!r}, {self.version})")
            elif f.default is DEFAULT_FACTORY:
                body.append(f"{ind}if o.{f.attr} != {self.default_expr(f)}: raise _NV({f.name!r}, {self.version})")
            else:
                body.append(f"{ind}if o.{f.attr} != {self.const(f.default)}: raise _NV({f.name!r}, {self.version})")
        if self.flexible:
            if tagged:
                body.append(f"{ind}known = []")
                for f in tagged:
                    d = self.default_expr(f)
                    cond = f"o.{f.attr}" if d == "[]" else f"o.{f.attr} != {d}"
                    body.append(f"{ind}if {cond}:")
                    body.append(f"{ind}    outer = w; w = bytearray()")
                    body.append(f"{ind}    try:")
                    body += self.encode_value(f.type, f, f"o.{f.attr}", ind + "        ", f.name)
                    body.append(f"{ind}    except Exception as e: raise _EF({f.name!r}, e) from None")
                    body.append(f"{ind}    known.append(({f.tag}, bytes(w))); w = outer")
                body.append(f"{ind}if known or o._unknown_tags: _WT(w, known, o._unknown_tags)")
            else:
                body.append(f"{ind}if o._unknown_tags: _WT(w, [], o._unknown_tags)")
            body.append(f"{ind}else: w.append(0)")
        if not body:
            body.append(f"{ind}pass")
        self.src.append(f"def {fn}(o, w):\n" + "\n".join(body) + "\n")
        del self.ns[fn]
        return fn

    def build(self) -> tuple[Decoder, Encoder, str]:
        dec = self.struct_decoder(self.spec.struct)
        enc = self.struct_encoder(self.spec.struct)
        source = "\n".join(self.src)
        code = compile(source, f"<codec {self.spec.name} v{self.version}>", "exec")
        exec(code, self.ns)
        return self.ns[dec], self.ns[enc], source


def compile_version(spec: MessageSpec, version: int,
                    classes: dict[str, type[Struct]]) -> tuple[Decoder, Encoder, str]:
    """Generate, compile and return (decoder, encoder, source) of the message at ``version``."""
    return _Gen(spec, version, classes).build()
