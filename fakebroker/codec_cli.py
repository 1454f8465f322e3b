"""``fakebroker decode`` and ``fakebroker encode``: Kafka frames <-> JSON, for captured traffic.

The JSON form of a frame::

    {"kind": "request", "api": "JoinGroup", "apiKey": 11, "version": 9, "sizePrefix": false,
     "header": {"CorrelationId": 7, "ClientId": "c"}, "body": {...spec field names...}}

``encode`` reads exactly what ``decode`` prints, so ``decode | encode`` gives the bytes back.

A JoinGroup or SyncGroup of Connect's classic protocol (protocol type ``connect``, or a
response naming ``default`` / ``compatible`` / ``sessioned``) carries Connect's own bytes in
its Metadata / Assignment fields. ``decode`` adds them decoded under ``embedded``, by field
path (``schemas/connect/``: the version prefix, the fields, and a metadata's Allocation as
an assignment in turn); bytes that do not decode say why there instead. The body keeps
the hex, so ``encode`` (which ignores ``embedded``) still gives the frame back::

    "embedded": {"Protocols[0].Metadata": {"spec": "ConnectProtocolMetadata", "version": 2,
                 "value": {"Url": "http://w1:8083/", "ConfigOffset": 7, "Allocation": null}}}
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO

from .parse_guard import InputLimit, loads_json
from .protocol import DecodeError, EncodeError, Registry, Struct
from .protocol.framing import (
    add_size_prefix, decode_request, decode_response, encode_request, encode_response,
    has_size_prefix, strip_size_prefix,
)


class InputError(Exception):
    """Malformed input: reported as one line, exit status 1."""


def add_parsers(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    d = sub.add_parser(
        "decode", parents=[common],
        help="decode a Kafka frame given as hex into JSON",
        description="Decode one Kafka request or response frame, given as hex (argument or "
                    "stdin; whitespace and a 4-byte size prefix are allowed), and print it as "
                    "JSON. Requests describe themselves; a response needs --response --api "
                    "--version. In a JoinGroup / SyncGroup of Connect's protocol, Connect's "
                    "metadata and assignments are also shown decoded, under 'embedded'. Exit 0 "
                    "on success, 1 on malformed input (the line names the field path, byte "
                    "offset and rule), 2 on usage errors.")
    d.add_argument("hex", nargs="?", help="the frame as hex; read from stdin when omitted")
    d.add_argument("--response", action="store_true", help="the frame is a response")
    d.add_argument("--api", help="API name or key of a response (JoinGroup, 11, ...)")
    d.add_argument("--version", type=int, help="API version of a response")
    d.add_argument("--size-prefix", choices=["auto", "yes", "no"], default="auto",
                   help="whether the hex starts with the 4-byte frame size (default: auto, "
                        "taken as present when it equals the length that follows)")
    d.set_defaults(func=cmd_decode)
    e = sub.add_parser(
        "encode", parents=[common],
        help="encode JSON (as printed by decode) back into a hex frame",
        description="Read a frame in the JSON form that 'fakebroker decode' prints (file "
                    "argument or stdin) and print its bytes as hex. Exit 0 on success, 1 on "
                    "invalid input (naming the field), 2 on usage errors.")
    e.add_argument("file", nargs="?", help="JSON file; read from stdin when omitted")
    e.add_argument("--size-prefix", choices=["auto", "yes", "no"], default="auto",
                   help="prepend the 4-byte frame size (default: as the JSON's sizePrefix says)")
    e.set_defaults(func=cmd_encode)


def _read_hex(text: str) -> bytes:
    cleaned = "".join(text.split())
    if cleaned.startswith(("0x", "0X")):
        cleaned = cleaned[2:]
    try:
        return bytes.fromhex(cleaned)
    except ValueError as e:
        raise InputError(f"input is not hex: {e}") from None


def decode_frame(registry: Registry, data: bytes, *, response: bool, api: str | None,
                 version: int | None, size_prefix: str = "auto") -> dict[str, Any]:
    prefixed = size_prefix == "yes" or (size_prefix == "auto" and has_size_prefix(data))
    frame = strip_size_prefix(data) if prefixed else data
    base = 4 if prefixed else 0
    if response:
        key = registry.by_api_name(api or "")
        resp = decode_response(registry, frame, key, version or 0, base=base)
        header, body = resp.header, resp.body
    else:
        req = decode_request(registry, frame, base=base)
        key, version, header, body = req.api_key, req.version, req.header, req.body
    api_name = registry.api_name(key)
    out = {"kind": "response" if response else "request", "api": api_name,
           "apiKey": key, "version": version, "sizePrefix": prefixed,
           "header": header.to_json(), "body": body.to_json()}
    inner = embedded(registry, api_name, out["kind"], body)
    if inner:
        out["embedded"] = inner
    return out


# ---------------------------------------------------------------- Connect's embedded bytes

CONNECT_PROTOCOLS = ("default", "compatible", "sessioned")  # connect.protocol eager / compatible / sessioned
METADATA, ASSIGNMENT = "ConnectProtocolMetadata", "ConnectProtocolAssignment"


def embedded(registry: Registry, api: str, kind: str, body: Struct) -> dict[str, Any]:
    """Connect's metadata and assignments inside a classic group frame, decoded by field path."""
    ptype, pname = getattr(body, "protocol_type", None), getattr(body, "protocol_name", None)
    if ptype != "connect" and not (ptype is None and pname in CONNECT_PROTOCOLS):
        return {}
    places: list[tuple[str, str, bytes | None]] = []
    if (api, kind) == ("JoinGroup", "request"):
        places = [(f"Protocols[{i}].Metadata", METADATA, p.metadata) for i, p in enumerate(body.protocols)]
    elif (api, kind) == ("JoinGroup", "response"):
        places = [(f"Members[{i}].Metadata", METADATA, m.metadata) for i, m in enumerate(body.members)]
    elif (api, kind) == ("SyncGroup", "request"):
        places = [(f"Assignments[{i}].Assignment", ASSIGNMENT, a.assignment) for i, a in enumerate(body.assignments)]
    elif (api, kind) == ("SyncGroup", "response"):
        places = [("Assignment", ASSIGNMENT, body.assignment)]
    # An empty field is no payload (a follower's SyncGroup, an answer without an assignment).
    return {path: _decode_embedded(registry, spec, data) for path, spec, data in places if data}


def _decode_embedded(registry: Registry, spec: str, data: bytes) -> dict[str, Any]:
    try:
        version, value = registry[spec].decode_versioned(data)
    except DecodeError as e:
        return {"spec": spec, "error": str(e)}
    out: dict[str, Any] = {"spec": spec, "version": version, "value": value.to_json()}
    allocation = getattr(value, "allocation", None) if spec == METADATA else None
    if allocation:
        out["allocation"] = _decode_embedded(registry, ASSIGNMENT, allocation)
    return out


def encode_frame(registry: Registry, doc: Any, size_prefix: str = "auto") -> bytes:
    if not isinstance(doc, dict):
        raise InputError("the JSON must be an object with kind, api, version, header, body")
    for key in ("kind", "version", "body"):
        if key not in doc:
            raise InputError(f"missing key {key!r}")
    if doc["kind"] not in ("request", "response"):
        raise InputError(f"kind: must be 'request' or 'response', got {doc['kind']!r}")
    api = doc.get("apiKey", doc.get("api"))
    try:
        key = api if isinstance(api, int) else registry.by_api_name(str(api))
    except KeyError as e:
        raise InputError(f"api: {e.args[0]}") from None
    version = doc["version"]
    if not isinstance(version, int):
        raise InputError(f"version: must be an integer, got {version!r}")
    header = doc.get("header") or {}
    if not isinstance(header, dict):
        raise InputError(f"header: must be an object, got {type(header).__name__}")
    mt = registry.request(key) if doc["kind"] == "request" else registry.response(key)
    try:
        body = mt.cls.from_json(doc["body"], "body")
    except ValueError as e:
        raise InputError(str(e)) from None
    correlation_id = header.get("CorrelationId", 0)
    if doc["kind"] == "request":
        frame = encode_request(registry, body, version, correlation_id, header.get("ClientId"))
    else:
        frame = encode_response(registry, body, version, correlation_id)
    prefixed = size_prefix == "yes" or (size_prefix == "auto" and bool(doc.get("sizePrefix")))
    return add_size_prefix(frame) if prefixed else frame


def _input(arg: str | None, stdin: TextIO) -> str:
    if arg is not None:
        return arg
    if stdin.isatty():
        raise InputError("no input: give it as an argument or on stdin")
    return stdin.read()


def _prefix_hint(data: bytes, mode: str) -> str:
    """Auto-detection took the input as unprefixed; say so when it looks like a bad prefix."""
    if mode != "auto" or len(data) < 4 or has_size_prefix(data):
        return ""
    size = int.from_bytes(data[:4], "big", signed=True)
    if 0 <= size < 2 * len(data):
        return (f" (read without a size prefix; if the first 4 bytes are one, it says {size} "
                f"byte(s) but {len(data) - 4} follow)")
    return ""


def cmd_decode(args: argparse.Namespace, registry: Registry) -> int:
    if args.response and (args.api is None or args.version is None):
        print("fakebroker decode: --response needs --api and --version", file=sys.stderr)
        return 2
    try:
        data = _read_hex(_input(args.hex, sys.stdin))
        out = decode_frame(registry, data, response=args.response, api=args.api,
                           version=args.version, size_prefix=args.size_prefix)
    except KeyError as e:
        print(f"fakebroker decode: {e.args[0]}", file=sys.stderr)
        return 2
    except (InputError, DecodeError) as e:
        print(f"error: {e}{_prefix_hint(data if 'data' in locals() else b'', args.size_prefix)}",
              file=sys.stderr)
        return 1
    try:
        json.dump(out, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
        sys.stdout.flush()
    except BrokenPipeError:  # `decode ... | head`: the reader stopped early, which is fine
        sys.stdout = None  # type: ignore[assignment]  # keep Python from flushing again at exit
    return 0


def cmd_encode(args: argparse.Namespace, registry: Registry) -> int:
    try:
        if args.file is not None:
            with open(args.file, encoding="utf-8") as fh:
                try:
                    text = fh.read()
                except UnicodeDecodeError as e:
                    raise InputError(f"not UTF-8 at byte {e.start}: {e.reason} "
                                     "(rule: encoding)") from None
        else:
            text = _input(None, sys.stdin)
        try:
            doc = loads_json(text)
        except json.JSONDecodeError as e:
            raise InputError(f"invalid JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
        except InputLimit as e:
            raise InputError(str(e)) from None
        frame = encode_frame(registry, doc, args.size_prefix)
    except OSError as e:
        print(f"fakebroker encode: {e}", file=sys.stderr)
        return 2
    except (InputError, EncodeError, KeyError) as e:
        msg = str(e.args[0] if isinstance(e, KeyError) else e)
        where = f"{args.file}: " if args.file is not None and not msg.startswith(args.file) else ""
        print(f"error: {where}{msg}", file=sys.stderr)
        return 1
    print(frame.hex())
    return 0
