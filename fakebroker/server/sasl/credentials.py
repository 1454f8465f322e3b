"""Who may log in, and the SCRAM credentials derived from their passwords once per broker."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

PLAIN = "PLAIN"
SCRAM_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MECHANISMS = (PLAIN, *SCRAM_HASHES)
# Kafka refuses SCRAM credentials with fewer iterations (ScramMechanism.minIterations).
MIN_SCRAM_ITERATIONS = 4096


@dataclass(frozen=True)
class ScramCredential:
    """What a SCRAM server keeps of a password (RFC 5802 section 3): never the password."""

    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes

    @staticmethod
    def derive(password: str, hash_name: str, salt: bytes, iterations: int) -> ScramCredential:
        salted = hashlib.pbkdf2_hmac(hash_name, password.encode(), salt, iterations)
        client_key = hmac.digest(salted, b"Client Key", hash_name)
        return ScramCredential(salt, iterations, hashlib.new(hash_name, client_key).digest(),
                               hmac.digest(salted, b"Server Key", hash_name))


@dataclass(frozen=True)
class SaslConfig:
    """The listener's SASL set-up: the mechanisms it enables (in the order SaslHandshake
    lists them) and the users with their passwords (the same for every mechanism)."""

    mechanisms: tuple[str, ...]
    users: Mapping[str, str]
    scram_iterations: int = MIN_SCRAM_ITERATIONS
    # Salts and server nonces: random by default, injectable so tests are deterministic.
    random_bytes: Callable[[int], bytes] = secrets.token_bytes
    scram: dict[tuple[str, str], ScramCredential] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        validate_mechanisms(self.mechanisms)
        if self.scram_iterations < MIN_SCRAM_ITERATIONS:
            raise ValueError(f"scram_iterations {self.scram_iterations}: SCRAM needs at least "
                             f"{MIN_SCRAM_ITERATIONS} (Kafka's minimum)")
        creds = {(mech, user): ScramCredential.derive(pw, SCRAM_HASHES[mech],
                                                      self.random_bytes(16), self.scram_iterations)
                 for mech in self.mechanisms if mech in SCRAM_HASHES
                 for user, pw in self.users.items()}
        object.__setattr__(self, "scram", creds)


def validate_mechanisms(mechanisms: tuple[str, ...]) -> None:
    """Rule sasl-mechanisms: at least one, each one this broker implements, no repeats."""
    if not mechanisms:
        raise ValueError("SASL needs at least one mechanism")
    for m in mechanisms:
        if m not in MECHANISMS:
            raise ValueError(f"SASL mechanism {m!r} is not supported (choose from {', '.join(MECHANISMS)})")
    if len(set(mechanisms)) != len(mechanisms):
        raise ValueError(f"SASL mechanisms {', '.join(mechanisms)}: listed twice")


def parse_users_file(path: Path) -> dict[str, str]:
    """``NAME=PASSWORD`` per line; blank lines and ``#`` comments ignored. Errors name the
    line and the rule, never the password."""
    users: dict[str, str] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: cannot read the SASL users file ({e})") from None
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, password = line.partition("=")
        name = name.strip()
        if not sep or not name:
            raise ValueError(f"{path}:{n}: expected NAME=PASSWORD")
        if not password:
            raise ValueError(f"{path}:{n}: user {name!r} has an empty password")
        if name in users:
            raise ValueError(f"{path}:{n}: user {name!r} is listed twice")
        users[name] = password
    if not users:
        raise ValueError(f"{path}: no users (expected NAME=PASSWORD lines)")
    return users
