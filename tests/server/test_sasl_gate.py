"""The SASL gate and its mechanisms, sans IO: every state transition, every refusal with
Kafka's error code and message, and SCRAM checked against RFC 7677's worked example."""

from __future__ import annotations

import base64
import hashlib
import hmac
import itertools
from pathlib import Path

import pytest

from fakebroker.protocol import default_registry
from fakebroker.protocol.error_codes import ErrorCode
from fakebroker.server.sasl import SaslConfig, SaslGate, parse_users_file
from fakebroker.server.sasl.credentials import ScramCredential
from fakebroker.server.sasl.gate import SaslState
from fakebroker.server.sasl.mechanism import AuthFailed
from fakebroker.server.sasl.scram import decode_saslname, verify_proof

REG = default_registry()
HANDSHAKE, AUTH = REG["SaslHandshakeRequest"], REG["SaslAuthenticateRequest"]
API_VERSIONS, JOIN = REG["ApiVersionsRequest"], REG["JoinGroupRequest"]
GENERIC = "Authentication failed during authentication due to invalid credentials with SASL mechanism "


def counter_bytes(n: int, _c: itertools.count = itertools.count()) -> bytes:
    """Deterministic 'random' bytes: salts and nonces differ, runs repeat."""
    return hashlib.sha256(str(next(_c)).encode()).digest()[:n]


CONFIG = SaslConfig(("SCRAM-SHA-512", "PLAIN", "SCRAM-SHA-256"), {"alice": "alice-secret", "bo,b=": "pw"},
                    random_bytes=counter_bytes)


def gate() -> SaslGate:
    return SaslGate(CONFIG, REG)


def send(g: SaslGate, msg, **fields):  # type: ignore[no-untyped-def]
    return g.receive(msg.api_key, msg.new(**fields))


def handshake(mech: str) -> SaslGate:
    g = gate()
    v = send(g, HANDSHAKE, mechanism=mech)
    assert v.answer.error_code == 0 and v.close is None
    return g


# ----------------------------------------------------------------- HANDSHAKE state

def test_api_versions_is_admitted_before_the_handshake_and_the_state_stays() -> None:
    g = gate()
    assert send(g, API_VERSIONS).admit and g.state is SaslState.HANDSHAKE


def test_handshake_lists_the_enabled_mechanisms_in_configured_order() -> None:
    g = gate()
    v = send(g, HANDSHAKE, mechanism="PLAIN")
    assert (v.admit, v.close, v.answer.error_code) == (False, None, 0)
    assert v.answer.mechanisms == ["SCRAM-SHA-512", "PLAIN", "SCRAM-SHA-256"]
    assert g.state is SaslState.AUTHENTICATE


@pytest.mark.parametrize("mech", ["GSSAPI", "plain", "OAUTHBEARER", ""])
def test_an_unsupported_mechanism_is_answered_then_the_connection_closes(mech: str) -> None:
    g = gate()
    v = send(g, HANDSHAKE, mechanism=mech)
    assert v.answer.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
    assert v.answer.mechanisms == list(CONFIG.mechanisms)
    assert v.close == f"unsupported SASL mechanism {mech!r}" and g.state is SaslState.FAILED


@pytest.mark.parametrize("msg", [JOIN, AUTH], ids=["JoinGroup", "SaslAuthenticate"])
def test_any_other_request_before_the_handshake_closes_without_an_answer(msg) -> None:  # type: ignore[no-untyped-def]
    g = gate()
    v = g.receive(msg.api_key, msg.new())
    assert (v.admit, v.answer) == (False, None)
    assert "during the SASL handshake (rule sasl-handshake-first)" in (v.close or "")
    assert g.state is SaslState.FAILED


# ----------------------------------------------------------------- AUTHENTICATE state

@pytest.mark.parametrize("msg", [JOIN, API_VERSIONS, HANDSHAKE], ids=["JoinGroup", "ApiVersions", "SaslHandshake"])
def test_only_sasl_authenticate_is_accepted_while_authenticating(msg) -> None:  # type: ignore[no-untyped-def]
    g = handshake("PLAIN")
    v = g.receive(msg.api_key, msg.new())
    assert v.answer is None and "(rule sasl-authenticate-only)" in (v.close or "")


def test_plain_with_the_right_password_completes_and_then_everything_is_admitted() -> None:
    g = handshake("PLAIN")
    v = send(g, AUTH, auth_bytes=b"\x00alice\x00alice-secret")
    assert (v.answer.error_code, v.answer.error_message, bytes(v.answer.auth_bytes), v.close) == (0, None, b"", None)
    assert g.state is SaslState.COMPLETE and g.user == "alice"
    assert send(g, JOIN).admit and send(g, API_VERSIONS).admit


@pytest.mark.parametrize("token, message", [
    (b"\x00alice\x00wrong", "Authentication failed: Invalid username or password"),
    (b"\x00mallory\x00alice-secret", "Authentication failed: Invalid username or password"),
    (b"\x00\x00alice-secret", "Authentication failed: username not specified"),
    (b"\x00alice\x00", "Authentication failed: password not specified"),
    (b"bob\x00alice\x00alice-secret",
     "Authentication failed: Client requested an authorization id that is different from username"),
    (b"alice\x00alice-secret", GENERIC + "PLAIN"),
    (b"\x00alice\x00alice-secret\x00", GENERIC + "PLAIN"),
    (b"\x00\xff\x00x", GENERIC + "PLAIN"),
])
def test_plain_refusals_carry_kafkas_message_and_close(token: bytes, message: str) -> None:
    g = handshake("PLAIN")
    v = send(g, AUTH, auth_bytes=token)
    assert v.answer.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert v.answer.error_message == message and bytes(v.answer.auth_bytes) == b""
    assert v.close and v.close.startswith("SASL PLAIN authentication failed")
    assert g.state is SaslState.FAILED and g.user is None


def test_plain_accepts_an_authorization_id_equal_to_the_user() -> None:
    g = handshake("PLAIN")
    assert send(g, AUTH, auth_bytes=b"alice\x00alice\x00alice-secret").answer.error_code == 0
    assert g.user == "alice"


# ----------------------------------------------------------------- SCRAM

class ScramClient:
    """The client half of RFC 5802, written from the RFC for these tests."""

    def __init__(self, mech: str, user: str, password: str, nonce: str = "cnonce123") -> None:
        self.hash = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}[mech]
        self.user, self.password, self.nonce = user, password, nonce
        name = user.replace("=", "=3D").replace(",", "=2C")
        self.bare = f"n={name},r={nonce}"

    def first(self) -> bytes:
        return f"n,,{self.bare}".encode()

    def final(self, server_first: bytes, nonce: str | None = None, binding: str = "biws") -> bytes:
        attrs = dict(a.split("=", 1) for a in server_first.decode().split(","))
        salted = hashlib.pbkdf2_hmac(self.hash, self.password.encode(),
                                     base64.b64decode(attrs["s"]), int(attrs["i"]))
        client_key = hmac.digest(salted, b"Client Key", self.hash)
        stored = hashlib.new(self.hash, client_key).digest()
        without = f"c={binding},r={nonce or attrs['r']}"
        self.auth_message = f"{self.bare},{server_first.decode()},{without}".encode()
        sig = hmac.digest(stored, self.auth_message, self.hash)
        self.server_key = hmac.digest(salted, b"Server Key", self.hash)
        proof = bytes(a ^ b for a, b in zip(client_key, sig))
        return f"{without},p={base64.b64encode(proof).decode()}".encode()


@pytest.mark.parametrize("mech", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
@pytest.mark.parametrize("user, pw", [("alice", "alice-secret"), ("bo,b=", "pw")])
def test_scram_completes_and_the_server_proves_it_knows_the_credential(mech: str, user: str, pw: str) -> None:
    g, c = handshake(mech), ScramClient(mech, user, pw)
    first = send(g, AUTH, auth_bytes=c.first()).answer
    assert first.error_code == 0 and g.state is SaslState.AUTHENTICATE
    server_first = bytes(first.auth_bytes)
    assert server_first.startswith(b"r=cnonce123") and b",i=4096" in server_first
    final = send(g, AUTH, auth_bytes=c.final(server_first)).answer
    assert final.error_code == 0 and g.state is SaslState.COMPLETE and g.user == user
    expected = hmac.digest(c.server_key, c.auth_message, c.hash)
    assert bytes(final.auth_bytes) == b"v=" + base64.b64encode(expected)


def test_two_connections_get_different_server_nonces() -> None:
    a, b = handshake("SCRAM-SHA-256"), handshake("SCRAM-SHA-256")
    c = ScramClient("SCRAM-SHA-256", "alice", "alice-secret")
    assert send(a, AUTH, auth_bytes=c.first()).answer.auth_bytes != send(b, AUTH, auth_bytes=c.first()).answer.auth_bytes


def _refused_at(step: str, mech: str, **kw) -> None:  # type: ignore[no-untyped-def]
    g = handshake(mech)
    c = ScramClient(mech, kw.pop("user", "alice"), kw.pop("pw", "alice-secret"))
    first_token = kw.pop("first", c.first())
    first = send(g, AUTH, auth_bytes=first_token).answer
    if step == "first":
        v_answer = first
    else:
        assert first.error_code == 0
        v_answer = send(g, AUTH, auth_bytes=kw.pop("final", None) or c.final(bytes(first.auth_bytes), **kw)).answer
    assert v_answer.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert v_answer.error_message == GENERIC + mech  # names nothing, as Kafka's
    assert g.state is SaslState.FAILED


@pytest.mark.parametrize("mech", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_refusals_use_kafkas_generic_message(mech: str) -> None:
    _refused_at("final", mech, pw="wrong")
    _refused_at("first", mech, user="mallory")
    _refused_at("final", mech, nonce="cnonce123-not-the-servers")
    _refused_at("final", mech, binding="eSws")  # "y,," is not the header sent
    _refused_at("final", mech, final=b"c=biws,r=x")  # no proof
    _refused_at("first", mech, first=b"y,,n=alice,r=abc")  # channel binding flags
    _refused_at("first", mech, first=b"p=tls-unique,,n=alice,r=abc")
    _refused_at("first", mech, first=b"n,,r=abc,n=alice")  # attribute order
    _refused_at("first", mech, first=b"n,,n=al=2Xce,r=abc")  # bad saslname escape
    _refused_at("first", mech, first=b"garbage")
    _refused_at("first", mech, first=b"n,,n=alice,r=\xff")


def test_scram_authorization_id_other_than_the_user_is_named() -> None:
    g = handshake("SCRAM-SHA-256")
    v = send(g, AUTH, auth_bytes=b"n,a=bob,n=alice,r=abc").answer
    assert v.error_message == ("Authentication failed: Client requested an authorization id "
                               "that is different from username")


def test_scram_sha_256_matches_rfc_7677_worked_example() -> None:
    # RFC 7677 section 3: user "user", password "pencil".
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    cred = ScramCredential.derive("pencil", "sha256", salt, 4096)
    nonce = "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
    auth = (f"n=user,r=rOprNGfwEbeRWgbNEkqO,r={nonce},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,"
            f"c=biws,r={nonce}").encode()
    proof = base64.b64decode("dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    assert verify_proof(cred, "sha256", auth, proof, "user") == base64.b64decode(
        "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
    with pytest.raises(AuthFailed):
        verify_proof(cred, "sha256", auth, bytes(32), "user")


@pytest.mark.parametrize("raw, name", [("a=2Cb", "a,b"), ("a=3Db", "a=b"), ("plain", "plain")])
def test_saslnames_unescape(raw: str, name: str) -> None:
    assert decode_saslname(raw) == name


# ----------------------------------------------------------------- COMPLETE state

def test_sasl_requests_after_completion_get_illegal_sasl_state_and_stay_open() -> None:
    g = handshake("PLAIN")
    send(g, AUTH, auth_bytes=b"\x00alice\x00alice-secret")
    again = send(g, AUTH, auth_bytes=b"\x00alice\x00alice-secret")
    assert (again.answer.error_code, again.close) == (ErrorCode.ILLEGAL_SASL_STATE, None)
    assert again.answer.error_message == "SaslAuthenticate request received after successful authentication"
    hs = send(g, HANDSHAKE, mechanism="PLAIN")
    assert (hs.answer.error_code, hs.answer.mechanisms, hs.close) == (ErrorCode.ILLEGAL_SASL_STATE, [], None)
    assert g.state is SaslState.COMPLETE


# ----------------------------------------------------------------- configuration

def test_users_file_parses_and_refuses_with_line_numbers(tmp_path: Path) -> None:
    good = tmp_path / "users"
    good.write_text("# who\nalice = s=cret\n\nbob=pw\n")
    assert parse_users_file(good) == {"alice": " s=cret", "bob": "pw"}
    for text, rule in [("alice\n", ":1: expected NAME=PASSWORD"), ("=pw\n", ":1: expected NAME=PASSWORD"),
                       ("a=1\na=2\n", ":2: user 'a' is listed twice"), ("a=\n", ":1: user 'a' has an empty password"),
                       ("# none\n", ": no users")]:
        bad = tmp_path / "bad"
        bad.write_text(text)
        with pytest.raises(ValueError, match=rule):
            parse_users_file(bad)
    with pytest.raises(ValueError, match="cannot read"):
        parse_users_file(tmp_path / "missing")


@pytest.mark.parametrize("mechs, iterations, rule", [
    ((), 4096, "at least one mechanism"), (("GSSAPI",), 4096, "'GSSAPI' is not supported"),
    (("PLAIN", "PLAIN"), 4096, "listed twice"), (("SCRAM-SHA-256",), 4095, "at least 4096"),
])
def test_sasl_config_refuses_what_kafka_would(mechs: tuple[str, ...], iterations: int, rule: str) -> None:
    with pytest.raises(ValueError, match=rule):
        SaslConfig(mechs, {"a": "b"}, scram_iterations=iterations)
