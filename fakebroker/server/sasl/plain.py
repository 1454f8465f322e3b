"""SASL/PLAIN (RFC 4616): one token, ``[authzid] NUL authcid NUL passwd``."""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from .mechanism import AuthFailed, Step


class PlainExchange:
    """Kafka's PlainSaslServer checks, in its order, with its messages."""

    def __init__(self, users: Mapping[str, str]) -> None:
        self.users = users

    def step(self, token: bytes) -> Step:
        parts = token.split(b"\x00")
        if len(parts) != 3:
            # A token the mechanism cannot parse gets Kafka's generic refusal.
            raise AuthFailed(None, f"expected 3 NUL-separated tokens, got {len(parts)}")
        try:
            authzid, user, password = (p.decode("utf-8") for p in parts)
        except UnicodeDecodeError:
            raise AuthFailed(None, "the token is not UTF-8") from None
        if not user:
            raise AuthFailed("Authentication failed: username not specified")
        if not password:
            raise AuthFailed("Authentication failed: password not specified")
        expected = self.users.get(user)
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            raise AuthFailed("Authentication failed: Invalid username or password")
        if authzid and authzid != user:
            raise AuthFailed("Authentication failed: Client requested an authorization id "
                             "that is different from username")
        return Step(b"", user)
