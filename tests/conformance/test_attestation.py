"""The in-toto attestation of a run: written beside the certificate, signed in a DSSE
envelope with the user's Ed25519 key, verified by ``conformance verify-attestation``; a
tampered payload, a tampered signature and a wrong key each fail with a reason naming it."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from conformance.reports.attestation import (ENVELOPE_FILE, PAYLOAD_TYPE, PREDICATE_TYPE, STATEMENT_FILE, AttestationError,
                                     pae, sign, statement, verify)
from conformance.reports.provenance import artefact_files, digest_files
from conformance.harness.target import load_target
from fakebroker.exit_codes import EXIT_FAILED, EXIT_OK, EXIT_PARTIAL, EXIT_USAGE

# One test process (make test: --dist loadgroup): its module-scoped run happens once, not once
# per process that gets one of its tests.
pytestmark = pytest.mark.xdist_group("attestation")

ROOT = Path(__file__).resolve().parents[2]
FAKEBROKER = ROOT / "fixtures" / "targets" / "fakebroker.toml"
SCHEMA = json.loads((ROOT / "schemas" / "attestation.schema.json").read_text())


def conformance(*args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "conformance.cli", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env=dict(os.environ))


def write_keypair(folder: Path, name: str) -> tuple[Path, Path]:
    key = Ed25519PrivateKey.generate()
    private, public = folder / f"{name}.pem", folder / f"{name}.pub.pem"
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    public.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo))
    return private, public


@pytest.fixture(scope="module")
def signed_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    """A real run of the fake broker (narrowed to one case: the attestation does not depend on
    the verdict), signed with a freshly generated key."""
    reports = tmp_path_factory.mktemp("attested")
    keys = tmp_path_factory.mktemp("keys")
    private, public = write_keypair(keys, "signer")
    r = conformance("run", "--target", str(FAKEBROKER), "-n", "0", "--reports", str(reports), "--no-html",
                    "-k", "CLS-JOIN-03", "--signing-key", str(private))
    return r, reports, public


def test_the_run_writes_a_statement_and_a_signed_envelope_that_verifies(signed_run) -> None:
    r, reports, public = signed_run
    assert r.returncode == EXIT_PARTIAL, r.stdout[-2000:] + r.stderr[-2000:]
    assert f"attestation: {reports / STATEMENT_FILE}, {reports / ENVELOPE_FILE}" in r.stdout
    v = conformance("verify-attestation", str(reports / ENVELOPE_FILE), "--key", str(public))
    assert v.returncode == EXIT_OK, v.stdout + v.stderr
    assert v.stdout.startswith(f"VALID {reports / ENVELOPE_FILE}: ") and " PARTIAL " in v.stdout


def test_the_statement_is_schema_valid_and_names_the_artefact_that_ran(signed_run) -> None:
    _, reports, _ = signed_run
    stmt = json.loads((reports / STATEMENT_FILE).read_text())
    cert = json.loads((reports / "certificate.json").read_text())
    jsonschema.Draft202012Validator(SCHEMA).validate(stmt)
    assert stmt["_type"] == "https://in-toto.io/Statement/v1" and stmt["predicateType"] == PREDICATE_TYPE
    assert stmt["predicate"] == cert
    digest = stmt["subject"][0]["digest"]["sha256"]
    assert digest == cert["provenance"]["artefact"]["sha256"]
    files, root, _ = artefact_files(load_target(FAKEBROKER))  # recomputed here, independently of the run
    assert digest == digest_files(files, root)
    # The envelope carries exactly this statement.
    envelope = json.loads((reports / ENVELOPE_FILE).read_text())
    assert envelope["payloadType"] == PAYLOAD_TYPE
    assert json.loads(base64.b64decode(envelope["payload"])) == stmt
    # The schema is not vacuous.
    for bad in (dict(stmt, _type="https://in-toto.io/Statement/v0.1"), dict(stmt, subject=[]),
                dict(stmt, subject=[{"name": "x", "digest": {"sha256": "abc"}}])):
        assert list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(bad))


def _reencode(envelope: dict, payload: bytes) -> dict:
    return dict(envelope, payload=base64.b64encode(payload).decode())


def test_a_tampered_payload_fails_naming_the_signature(signed_run, tmp_path: Path) -> None:
    _, reports, public = signed_run
    envelope = json.loads((reports / ENVELOPE_FILE).read_text())
    stmt = json.loads(base64.b64decode(envelope["payload"]))
    stmt["predicate"]["verdict"] = "CERTIFIED"  # the forgery one would want
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(_reencode(envelope, json.dumps(stmt).encode())))
    v = conformance("verify-attestation", str(forged), "--key", str(public))
    assert v.returncode == EXIT_FAILED
    assert v.stdout.strip() == (f"INVALID {forged}: signatures: the signature by keyid "
                                f"{envelope['signatures'][0]['keyid'][:16]}… does not match the payload "
                                "(payload or signature altered)")


def test_a_tampered_signature_fails(signed_run, tmp_path: Path) -> None:
    _, reports, public = signed_run
    envelope = json.loads((reports / ENVELOPE_FILE).read_text())
    sig = bytearray(base64.b64decode(envelope["signatures"][0]["sig"]))
    sig[0] ^= 1
    envelope["signatures"][0]["sig"] = base64.b64encode(bytes(sig)).decode()
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(envelope))
    v = conformance("verify-attestation", str(forged), "--key", str(public))
    assert v.returncode == EXIT_FAILED and "does not match the payload" in v.stdout
    assert len(v.stdout.strip().splitlines()) == 1


def test_a_wrong_key_fails_naming_both_keys(signed_run, tmp_path: Path) -> None:
    _, reports, _ = signed_run
    _, other = write_keypair(tmp_path, "other")
    v = conformance("verify-attestation", str(reports / ENVELOPE_FILE), "--key", str(other))
    assert v.returncode == EXIT_FAILED
    assert "signatures: none by the given key (keyid " in v.stdout and "signed by keyid " in v.stdout


def test_pae_is_dsse_v1() -> None:
    # The DSSE spec's own example (protocol.md): type "http://example.com/HelloWorld", body "hello world".
    assert pae("http://example.com/HelloWorld", b"hello world") == \
        b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"


def test_a_signed_statement_must_also_be_sound(signed_run) -> None:
    """A validly signed payload whose subject is not the certificate's artefact is refused:
    the signature vouches for the bytes, the check for what they say."""
    _, reports, _ = signed_run
    stmt = json.loads((reports / STATEMENT_FILE).read_text())
    stmt["subject"][0]["digest"]["sha256"] = "0" * 64
    key = Ed25519PrivateKey.generate()
    with pytest.raises(AttestationError, match="^subject digest 0{64} is not the certificate's artefact digest"):
        verify(sign(stmt, key), key.public_key())
    with pytest.raises(AttestationError, match="^payloadType is 'text/plain'"):
        verify(dict(sign(statement(stmt["predicate"]), key), payloadType="text/plain"), key.public_key())
    with pytest.raises(AttestationError, match="^not a DSSE envelope"):
        verify(stmt, key.public_key())


def test_a_certificate_without_an_artefact_digest_gets_no_statement(signed_run) -> None:
    _, reports, _ = signed_run
    cert = json.loads((reports / "certificate.json").read_text())
    cert["provenance"]["artefact"]["sha256"] = None
    with pytest.raises(AttestationError, match="provenance.artefact.sha256 is empty"):
        statement(cert)


def test_a_bad_signing_key_is_a_usage_error_before_anything_runs(tmp_path: Path) -> None:
    not_a_key = tmp_path / "key.pem"
    not_a_key.write_text("hello\n")
    r = conformance("run", "--target", str(FAKEBROKER), "--reports", str(tmp_path / "r"),
                    "--signing-key", str(not_a_key), timeout=120)
    assert r.returncode == EXIT_USAGE
    assert r.stderr.startswith(f"conformance: --signing-key {not_a_key}: not an unencrypted PEM private key")
    assert not (tmp_path / "r").exists()


def test_report_writes_it_again_and_never_leaves_a_stale_signature(signed_run, tmp_path: Path) -> None:
    _, reports, _ = signed_run
    copy = tmp_path / "reports"
    shutil.copytree(reports, copy)
    private, public = write_keypair(tmp_path, "release")
    r = conformance("report", "--reports", str(copy), "--no-html", "--signing-key", str(private), timeout=300)
    assert r.returncode == EXIT_PARTIAL, r.stdout + r.stderr
    v = conformance("verify-attestation", str(copy / ENVELOPE_FILE), "--key", str(public))
    assert v.returncode == EXIT_OK, v.stdout
    # Unsigned this time: the statement is rewritten and the earlier envelope removed.
    r = conformance("report", "--reports", str(copy), "--no-html", timeout=300)
    assert r.returncode == EXIT_PARTIAL and f"attestation: {copy / STATEMENT_FILE}\n" in r.stdout
    assert (copy / STATEMENT_FILE).is_file() and not (copy / ENVELOPE_FILE).exists()


def test_openssl_verifies_the_signature_independently(signed_run, tmp_path: Path) -> None:
    """The envelope is plain DSSE: OpenSSL, knowing nothing of this project, verifies the
    signature over the PAE of the envelope's own type and payload."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl not on PATH (Debian package openssl): the independent check cannot run")
    _, reports, public = signed_run
    envelope = json.loads((reports / ENVELOPE_FILE).read_text())
    payload, kind = base64.b64decode(envelope["payload"]), envelope["payloadType"].encode()
    (tmp_path / "pae").write_bytes(b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload))
    (tmp_path / "sig").write_bytes(base64.b64decode(envelope["signatures"][0]["sig"]))
    r = subprocess.run([openssl, "pkeyutl", "-verify", "-pubin", "-inkey", str(public), "-rawin",
                        "-in", str(tmp_path / "pae"), "-sigfile", str(tmp_path / "sig")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "Signature Verified Successfully" in r.stdout, r.stdout + r.stderr
