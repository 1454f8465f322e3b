"""The record a release keeps: an in-toto attestation of a certified run.

An in-toto Statement v1 whose subject is the tested artefact (its name and the sha256 the
certificate's provenance gives it) and whose predicate is the certificate itself. With an
Ed25519 key it is signed in a DSSE envelope: the signature is over DSSE's pre-authentication
encoding (PAE) of the payload type and the serialized statement, so neither can be swapped
without breaking it. The signing and verifying are the ``cryptography`` package's.

    statement:  attestation.intoto.json       (always, when the artefact has a digest)
    envelope:   attestation.intoto.dsse.json  (with --signing-key)
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from pathlib import Path
from typing import Any

import jsonschema
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://connect-conformance.invalid/attestation/certificate/v1"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_FILE = "attestation.intoto.json"
ENVELOPE_FILE = "attestation.intoto.dsse.json"
SCHEMA_FILE = "attestation.schema.json"
CERTIFICATE_SCHEMA_FILE = "certificate.schema.json"


class AttestationError(Exception):
    """One line naming what is wrong: the key, the envelope's field, the signature, the statement."""


# ---------------------------------------------------------------- the statement

def statement(cert: dict[str, Any]) -> dict[str, Any]:
    """The in-toto Statement of a certificate; refused when the artefact has no digest
    (an external coordinator: nothing local ran, so there is nothing to name)."""
    digest = (cert.get("provenance") or {}).get("artefact", {}).get("sha256")
    if not digest:
        raise AttestationError("the certificate's provenance.artefact.sha256 is empty: no tested artefact "
                               "to name as the attestation's subject")
    name = cert["target"].get("implementation_text") or cert["target"]["name"]
    return {"_type": STATEMENT_TYPE, "subject": [{"name": name, "digest": {"sha256": digest}}],
            "predicateType": PREDICATE_TYPE, "predicate": cert}


def _schema(name: str) -> dict[str, Any]:
    from fakebroker.protocol import default_schema_dir
    return json.loads((default_schema_dir() / name).read_text(encoding="utf-8"))


def check_statement(stmt: Any) -> None:
    """The statement's schema, the certificate's schema on its predicate, then what a schema
    cannot say: the subject is the predicate's artefact."""
    _validate(stmt, _schema(SCHEMA_FILE), "statement")
    _validate(stmt["predicate"], _schema(CERTIFICATE_SCHEMA_FILE), "predicate")
    want = stmt["predicate"]["provenance"]["artefact"]["sha256"]
    got = stmt["subject"][0]["digest"]["sha256"]
    if got != want:
        raise AttestationError(f"subject digest {got} is not the certificate's artefact digest {want}")


# ---------------------------------------------------------------- DSSE

def _validate(doc: Any, schema: dict[str, Any], what: str) -> None:
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(doc), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        where = "/".join(str(p) for p in e.absolute_path) or "(top level)"
        raise AttestationError(f"{what} at {where}: {e.message[:200]}")


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE v1 pre-authentication encoding: "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body,
    lengths as ASCII decimal byte counts."""
    t = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(t), t, len(payload), payload)


def keyid(public: Ed25519PublicKey) -> str:
    """sha256 of the key's DER SubjectPublicKeyInfo: names the key without revealing anything."""
    der = public.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return hashlib.sha256(der).hexdigest()


def load_private_key(path: Path) -> Ed25519PrivateKey:
    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except OSError as e:
        raise AttestationError(f"--signing-key {path}: {e.strerror}") from None
    except (ValueError, TypeError) as e:  # not PEM, or encrypted
        raise AttestationError(f"--signing-key {path}: not an unencrypted PEM private key ({e})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise AttestationError(f"--signing-key {path}: an Ed25519 key is needed, got {type(key).__name__}")
    return key


def load_public_key(path: Path) -> Ed25519PublicKey:
    try:
        key = serialization.load_pem_public_key(path.read_bytes())
    except OSError as e:
        raise AttestationError(f"--key {path}: {e.strerror}") from None
    except (ValueError, TypeError) as e:
        raise AttestationError(f"--key {path}: not a PEM public key ({e})") from None
    if not isinstance(key, Ed25519PublicKey):
        raise AttestationError(f"--key {path}: an Ed25519 public key is needed, got {type(key).__name__}")
    return key


def sign(stmt: dict[str, Any], key: Ed25519PrivateKey) -> dict[str, Any]:
    payload = json.dumps(stmt, sort_keys=True, separators=(",", ":")).encode()
    sig = key.sign(pae(PAYLOAD_TYPE, payload))
    return {"payloadType": PAYLOAD_TYPE, "payload": base64.b64encode(payload).decode(),
            "signatures": [{"keyid": keyid(key.public_key()), "sig": base64.b64encode(sig).decode()}]}


def verify(envelope: Any, key: Ed25519PublicKey) -> dict[str, Any]:
    """The statement of a DSSE envelope signed by ``key``, checked; AttestationError naming
    the first thing that is wrong."""
    if not isinstance(envelope, dict) or "payload" not in envelope:
        raise AttestationError("not a DSSE envelope (no payload field): an unsigned statement cannot be verified")
    if envelope.get("payloadType") != PAYLOAD_TYPE:
        raise AttestationError(f"payloadType is {envelope.get('payloadType')!r}, not {PAYLOAD_TYPE!r}")
    payload = _b64(envelope["payload"], "payload")
    sigs = envelope.get("signatures")
    if not isinstance(sigs, list) or not sigs:
        raise AttestationError("signatures: none in the envelope")
    mine = keyid(key)
    for i, s in enumerate(sigs):
        if not isinstance(s, dict) or "sig" not in s:
            raise AttestationError(f"signatures[{i}]: no sig field")
        try:
            key.verify(_b64(s["sig"], f"signatures[{i}].sig"), pae(PAYLOAD_TYPE, payload))
            break
        except InvalidSignature:
            continue
    else:
        named = sorted({s.get("keyid", "?") for s in sigs if isinstance(s, dict)})
        if mine not in named:
            raise AttestationError(f"signatures: none by the given key (keyid {mine[:16]}…); "
                                   f"signed by keyid {', '.join(k[:16] + '…' for k in named)}")
        raise AttestationError(f"signatures: the signature by keyid {mine[:16]}… does not match the payload "
                               "(payload or signature altered)")
    try:
        stmt = json.loads(payload)
    except ValueError as e:
        raise AttestationError(f"payload: not JSON ({e})") from None
    check_statement(stmt)
    return stmt


def _b64(text: Any, field: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, TypeError, ValueError):
        raise AttestationError(f"{field}: not base64") from None


# ---------------------------------------------------------------- files

def write_attestation(reports: Path, cert: dict[str, Any], key: Ed25519PrivateKey | None) -> list[Path]:
    """The statement beside certificate.json and, with a key, its signed envelope; a stale
    attestation of an earlier run is removed first, never left to vouch for this one."""
    signed = reports / ENVELOPE_FILE
    for old in (reports / STATEMENT_FILE, signed):
        old.unlink(missing_ok=True)
    stmt = statement(cert)
    check_statement(stmt)
    out = [reports / STATEMENT_FILE]
    out[0].write_text(json.dumps(stmt, indent=1), encoding="utf-8")
    if key is not None:
        signed.write_text(json.dumps(sign(stmt, key), indent=1), encoding="utf-8")
        out.append(signed)
    return out


def verify_file(path: Path, public_key: Path) -> dict[str, Any]:
    key = load_public_key(public_key)
    try:
        envelope = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise AttestationError(f"{path}: {e.strerror}") from None
    except ValueError as e:
        raise AttestationError(f"{path}: not JSON ({e})") from None
    return verify(envelope, key)
