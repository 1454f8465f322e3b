"""SCRAM-SHA-256 / SCRAM-SHA-512 (RFC 5802, RFC 7677), server side, without channel binding
(as Kafka: the gs2 header must be ``n,,`` or ``n,a=AUTHZID,``)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Callable, Mapping

from .credentials import SCRAM_HASHES, ScramCredential
from .mechanism import AuthFailed, Step


def decode_saslname(name: str) -> str:
    """RFC 5802 saslname: ``=2C`` is a comma, ``=3D`` an equals sign, any other ``=`` is bad."""
    out, i = [], 0
    while i < len(name):
        if name[i] == "=":
            code = name[i:i + 3]
            if code not in ("=2C", "=3D"):
                raise AuthFailed(None, f"bad escape {code!r} in the user name")
            out.append("," if code == "=2C" else "=")
            i += 3
        else:
            out.append(name[i])
            i += 1
    return "".join(out)


def _attributes(text: str, what: str) -> list[tuple[str, str]]:
    out = []
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep or len(key) != 1:
            raise AuthFailed(None, f"{what}: malformed attribute {part!r}")
        out.append((key, value))
    return out


class ScramExchange:
    """Two client tokens: client-first (answered with server-first), client-final (answered
    with server-final, which proves the server knows the credential too)."""

    def __init__(self, mechanism: str, credentials: Mapping[tuple[str, str], ScramCredential],
                 random_bytes: Callable[[int], bytes]) -> None:
        self.mechanism = mechanism
        self.hash = SCRAM_HASHES[mechanism]
        self.credentials = credentials
        self.random_bytes = random_bytes
        # After client-first: gs2 header, client-first-bare, server-first, nonce, user, credential.
        self._first: tuple[str, str, str, str, str, ScramCredential] | None = None

    def step(self, token: bytes) -> Step:
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise AuthFailed(None, "the token is not UTF-8") from None
        return self._client_first(text) if self._first is None else self._client_final(text)

    def _client_first(self, text: str) -> Step:
        flag, sep, rest = text.partition(",")
        authz, sep2, bare = rest.partition(",")
        if not sep or not sep2:
            raise AuthFailed(None, "client-first: expected 'gs2-header,client-first-bare'")
        if flag != "n":
            raise AuthFailed(None, f"client-first: channel binding flag {flag!r} (only 'n')")
        if authz and not authz.startswith("a="):
            raise AuthFailed(None, f"client-first: bad authzid {authz!r}")
        attrs = _attributes(bare, "client-first")
        if len(attrs) < 2 or attrs[0][0] != "n" or attrs[1][0] != "r" or not attrs[1][1]:
            raise AuthFailed(None, "client-first: expected n=USER,r=NONCE")
        user, client_nonce = decode_saslname(attrs[0][1]), attrs[1][1]
        authzid = decode_saslname(authz[2:]) if authz else ""
        if authzid and authzid != user:
            raise AuthFailed("Authentication failed: Client requested an authorization id "
                             "that is different from username")
        cred = self.credentials.get((self.mechanism, user))
        if cred is None:
            raise AuthFailed(None, f"no {self.mechanism} credential for user {user!r}")
        nonce = client_nonce + base64.urlsafe_b64encode(self.random_bytes(18)).decode()
        server_first = f"r={nonce},s={base64.b64encode(cred.salt).decode()},i={cred.iterations}"
        self._first = (f"{flag},{authz},", bare, server_first, nonce, user, cred)
        return Step(server_first.encode())

    def _client_final(self, text: str) -> Step:
        assert self._first is not None
        gs2, bare, server_first, nonce, user, cred = self._first
        without_proof, sep, proof_b64 = text.rpartition(",p=")
        if not sep:
            raise AuthFailed(None, "client-final: no proof (p=)")
        attrs = _attributes(without_proof, "client-final")
        if len(attrs) < 2 or attrs[0][0] != "c" or attrs[1][0] != "r":
            raise AuthFailed(None, "client-final: expected c=...,r=...")
        if attrs[0][1] != base64.b64encode(gs2.encode()).decode():
            raise AuthFailed(None, "client-final: channel binding (c=) is not the gs2 header sent")
        if attrs[1][1] != nonce:
            raise AuthFailed(None, "client-final: the nonce is not the one the server sent")
        try:
            proof = base64.b64decode(proof_b64, validate=True)
        except binascii.Error:
            raise AuthFailed(None, "client-final: the proof is not base64") from None
        auth_message = f"{bare},{server_first},{without_proof}".encode()
        verifier = verify_proof(cred, self.hash, auth_message, proof, user)
        return Step(b"v=" + base64.b64encode(verifier), user)


def verify_proof(cred: ScramCredential, hash_name: str, auth_message: bytes, proof: bytes,
                 user: str) -> bytes:
    """RFC 5802 section 3: the client's proof XOR its signature is a ClientKey whose hash is
    the StoredKey. Returns the ServerSignature that proves the server to the client."""
    signature = hmac.digest(cred.stored_key, auth_message, hash_name)
    if len(proof) != len(signature):
        raise AuthFailed(None, "client-final: the proof has the wrong length")
    client_key = bytes(a ^ b for a, b in zip(proof, signature))
    if not hmac.compare_digest(hashlib.new(hash_name, client_key).digest(), cred.stored_key):
        raise AuthFailed(None, f"invalid proof for user {user!r}")
    return hmac.digest(cred.server_key, auth_message, hash_name)
