"""The set of loaded specs, and the per-message codec that compiles each version lazily."""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .compile import Decoder, Encoder, compile_version
from .errors import DecodeError, EncodeError, SpecError
from .messages import Struct, make_classes, sent_json
from .spec import MessageSpec, build_spec, parse_spec_bytes, read_spec_file
from .spec_verdicts import passed, remember, verdict_key


def default_schema_dir() -> Path:
    """``schemas/`` of a source checkout, or the copy shipped inside the wheel."""
    env = os.environ.get("FAKEBROKER_SCHEMAS")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parent
    for candidate in (here.parent.parent / "schemas", here.parent / "_schemas"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("no schemas/ directory found; set FAKEBROKER_SCHEMAS")


class MessageType:
    """One spec: its classes, and its encoder/decoder per version (compiled on first use)."""

    def __init__(self, spec: MessageSpec) -> None:
        self.spec = spec
        self.name = spec.name
        self.api_key = spec.api_key
        self.classes = make_classes(spec)
        self.cls: type[Struct] = self.classes[spec.name]
        self.cls._message_type = self  # type: ignore[attr-defined]
        self._codecs: dict[int, tuple[Decoder, Encoder, str]] = {}

    @property
    def lowest(self) -> int:
        return self.spec.lowest

    @property
    def highest(self) -> int:
        return self.spec.highest

    def is_flexible(self, version: int) -> bool:
        return version in self.spec.flexible_versions

    def supports(self, version: int) -> bool:
        return version in self.spec.valid_versions

    def _codec(self, version: int) -> tuple[Decoder, Encoder, str]:
        c = self._codecs.get(version)
        if c is None:
            if not self.supports(version):
                raise DecodeError(self.name, 0, "unsupported-version",
                                  f"version {version} is outside {self.name}'s "
                                  f"valid versions {self.spec.valid_versions}")
            c = self._codecs[version] = compile_version(self.spec, version, self.classes)
        return c

    def source(self, version: int) -> str:
        """The generated Python code for a version (for debugging the compiler)."""
        return self._codec(version)[2]

    def new(self, **fields: Any) -> Struct:
        return self.cls(**fields)

    def decode_from(self, buf: bytes, pos: int, version: int) -> tuple[Struct, int]:
        """Decode one message starting at ``pos``; returns it and the position after it."""
        dec = self._codec(version)[0]
        try:
            return dec(buf, pos)
        except DecodeError as e:
            raise e.prepend(self.name) from None
        except Exception as e:  # noqa: BLE001 - a peer's bytes must never escape as anything else
            raise DecodeError(self.name, pos, "malformed", f"{type(e).__name__}: {e}") from None

    def decode(self, data: bytes | bytearray | memoryview, version: int, *, base: int = 0) -> Struct:
        """Decode exactly ``data``; bytes left over are an error (rule ``trailing-bytes``)."""
        return self.decode_rest(bytes(data), 0, version, base=base)

    def decode_rest(self, buf: bytes, pos: int, version: int, *, base: int = 0) -> Struct:
        """Decode exactly ``buf[pos:]`` without copying it (a frame's body after its header);
        offsets in errors count from ``buf``'s start plus ``base``."""
        try:
            obj, end = self.decode_from(buf, pos, version)
        except DecodeError as e:
            raise e.shift(base) from None
        if end != len(buf):
            raise DecodeError(self.name, base + end, "trailing-bytes",
                              f"{len(buf) - end} byte(s) left after the message")
        return obj

    def encode_into(self, obj: Struct, version: int, w: bytearray) -> None:
        if type(obj) is not self.cls:
            raise EncodeError(self.name, "wrong-type",
                              f"expected a {self.name}, got {type(obj).__name__}")
        try:
            enc = self._codec(version)[1]
        except DecodeError as e:
            raise EncodeError(self.name, e.rule, e.message) from None
        try:
            enc(obj, w)
        except EncodeError as e:
            raise e.prepend(self.name) from None

    def encode(self, obj: Struct, version: int) -> bytes:
        w = bytearray()
        self.encode_into(obj, version, w)
        return bytes(w)

    def sent_json(self, obj: Struct, version: int) -> dict[str, Any]:
        """The JSON form of what ``encode(obj, version)`` writes (equal to decoding it),
        without encoding or decoding: for recording an object already encoded."""
        return sent_json(obj, version, self.is_flexible(version))

    def encode_versioned(self, obj: Struct, version: int) -> bytes:
        """An int16 version, then the body: how Connect's embedded protocol (and Kafka's
        record values) carry their version inside opaque bytes."""
        w = bytearray(_VERSION.pack(version))
        self.encode_into(obj, version, w)
        return bytes(w)

    def decode_versioned(self, data: bytes | bytearray | memoryview) -> tuple[int, Struct]:
        """Read the int16 version prefix, then exactly one body of that version."""
        buf = bytes(data)
        if len(buf) < 2:
            raise DecodeError(f"{self.name}.<version>", 0, "truncated",
                              f"a version prefix needs 2 bytes, got {len(buf)}")
        (version,) = _VERSION.unpack_from(buf, 0)
        if not self.supports(version):
            raise DecodeError(f"{self.name}.<version>", 0, "unsupported-version",
                              f"version {version} is outside {self.spec.valid_versions}")
        return version, self.decode(buf[2:], version, base=2)

    def __repr__(self) -> str:
        return f"<MessageType {self.name} v{self.spec.valid_versions}>"


_VERSION = struct.Struct(">h")


class Registry:
    """Every loaded spec, by name and (for requests and responses) by API key."""

    def __init__(self, specs: Iterable[MessageSpec]) -> None:
        self.types: dict[str, MessageType] = {}
        self.requests: dict[int, MessageType] = {}
        self.responses: dict[int, MessageType] = {}
        # framing.py's per (kind, API key, version) header version and types, and its
        # response header templates (entries never change: specs are only ever added, and
        # an API key never changes hands).
        self.frame_layouts: dict[tuple[str, Any, int], Any] = {}
        for spec in specs:
            self.add(spec)

    def add(self, spec: MessageSpec) -> MessageType:
        if spec.name in self.types:
            raise SpecError(spec.file, spec.name, "duplicate-name",
                            f"{spec.name} is already defined by {self.types[spec.name].spec.file}")
        mt = MessageType(spec)
        by_key = {"request": self.requests, "response": self.responses}.get(spec.type)
        if by_key is not None:
            assert spec.api_key is not None
            if spec.api_key in by_key:
                raise SpecError(spec.file, spec.name, "duplicate-api-key",
                                f"API key {spec.api_key} is already used by {by_key[spec.api_key].name}")
            by_key[spec.api_key] = mt
        self.types[spec.name] = mt
        return mt

    @classmethod
    def load(cls, *dirs: Path | str) -> Registry:
        """Load every ``*.json`` spec below the directories (JSON Schemas, ``*.schema.json``
        and data files without ``fields`` are not specs and are skipped)."""
        roots: list[Path] = []
        for d in [Path(d) for d in dirs] or [default_schema_dir()]:
            if d.resolve() not in [r.resolve() for r in roots]:  # the same folder twice is once
                roots.append(d)
        specs = []
        bundled = default_schema_dir().resolve()
        for root in roots:
            if not root.is_dir():
                raise SpecError(str(root), "<dir>", "not-a-directory",
                                "does not exist" if not root.exists() else "is not a directory")
            files: list[tuple[Path, bytes]] = []
            for path in sorted(root.rglob("*.json")):
                if path.name.endswith(".schema.json"):
                    continue
                raw = path.read_bytes()
                if not _looks_like_spec(raw):
                    if root.resolve() != bundled:
                        read_spec_file(path)  # a user's file: broken JSON is refused, not skipped
                    continue
                files.append((path, raw))
            if not files:
                raise SpecError(str(root), "<dir>", "no-specs",
                                "has no spec file (*.json with fields and validVersions)")
            key = verdict_key([(p.relative_to(root).as_posix(), raw) for p, raw in files])
            known_good = passed(key)
            for path, raw in files:
                spec = build_spec(parse_spec_bytes(raw, str(path)), str(path), check=not known_good)
                if not spec.valid_versions.empty:  # Kafka keeps removed APIs as "none"
                    specs.append(spec)
            if not known_good:
                remember(key)  # every file of the directory passed
        return cls(specs)

    def __getitem__(self, name: str) -> MessageType:
        try:
            return self.types[name]
        except KeyError:
            raise KeyError(f"no spec named {name!r}") from None

    def __contains__(self, name: str) -> bool:
        return name in self.types

    def of(self, obj: Struct) -> MessageType:
        """The message type of a top-level message object."""
        mt = getattr(type(obj), "_message_type", None)
        if mt is None:
            raise EncodeError(type(obj).__name__, "wrong-type", "not a top-level message object")
        return mt

    def request(self, api_key: int) -> MessageType:
        try:
            return self.requests[api_key]
        except KeyError:  # a bare KeyError(999) would reach CLI users as just "999"
            raise KeyError(f"no request spec for API key {api_key}") from None

    def response(self, api_key: int) -> MessageType:
        try:
            return self.responses[api_key]
        except KeyError:
            raise KeyError(f"no response spec for API key {api_key}") from None

    def api_name(self, api_key: int) -> str:
        mt = self.requests.get(api_key)
        return mt.name[: -len("Request")] if mt else f"api{api_key}"

    def by_api_name(self, name: str) -> int:
        """``JoinGroup`` (or ``joingroup``, or a number) -> API key."""
        if name.isdigit():
            return int(name)
        for key, mt in self.requests.items():
            if mt.name[: -len("Request")].lower() == name.lower():
                return key
        raise KeyError(f"no API named {name!r}")


def _looks_like_spec(raw: bytes) -> bool:
    # Cheap sniff: spec files name a "type" and have "fields"; other JSON files under
    # schemas/ (catalogues, fault-plan schemas) are data.
    return b'"fields"' in raw and b'"validVersions"' in raw


_DEFAULT: Registry | None = None


def default_registry() -> Registry:
    """The registry of the shipped ``schemas/``, loaded once per process."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = Registry.load(default_schema_dir())
    return _DEFAULT
