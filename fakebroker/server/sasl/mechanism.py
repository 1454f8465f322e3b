"""What every mechanism's server side returns or raises."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    """The server's answer token; ``user`` is set when the exchange completed."""

    token: bytes
    user: str | None = None


class AuthFailed(Exception):
    """The exchange is refused. ``client_message`` is what Kafka tells the client (None:
    its generic "invalid credentials" text, which names nothing); ``detail`` is for our log."""

    def __init__(self, client_message: str | None, detail: str | None = None) -> None:
        super().__init__(detail or client_message or "authentication failed")
        self.client_message = client_message
        self.detail = detail or client_message or ""
