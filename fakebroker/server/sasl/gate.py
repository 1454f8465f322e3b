"""One connection's authentication, as Kafka's SaslServerAuthenticator orders it.

States: HANDSHAKE (ApiVersions and SaslHandshake only) -> AUTHENTICATE (SaslAuthenticate
only, until the mechanism completes) -> COMPLETE (every API; SaslHandshake and
SaslAuthenticate are answered ILLEGAL_SASL_STATE and the connection stays open). A request
out of order closes the connection; a refused handshake or token is answered, then closed.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass

from ...protocol import Registry, Struct
from ...protocol.error_codes import ErrorCode
from .credentials import PLAIN, SaslConfig
from .mechanism import AuthFailed
from .plain import PlainExchange
from .scram import ScramExchange

log = logging.getLogger("fakebroker.sasl")
API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36
SASL_APIS = (SASL_HANDSHAKE, SASL_AUTHENTICATE)
# What the listener advertises: SaslHandshake v0 switches to raw (unframed) tokens, which
# this broker does not speak, so only v1 (tokens in SaslAuthenticate requests) is offered.
ADVERTISED = {SASL_HANDSHAKE: (1, 1), SASL_AUTHENTICATE: (0, 2)}


class SaslState(enum.Enum):
    HANDSHAKE = "handshake"
    AUTHENTICATE = "authenticate"
    COMPLETE = "complete"
    FAILED = "failed"


@dataclass(frozen=True)
class SaslVerdict:
    """What the broker does with a request: ``answer`` it (then close when ``close`` says
    why), or close without an answer (``answer`` None), or pass it on (``admit`` True)."""

    admit: bool = False
    answer: Struct | None = None
    close: str | None = None


ADMIT = SaslVerdict(admit=True)


class SaslGate:
    def __init__(self, config: SaslConfig, registry: Registry) -> None:
        self.config = config
        self.registry = registry
        self.state = SaslState.HANDSHAKE
        self.user: str | None = None
        self.mechanism: str | None = None
        self._exchange: PlainExchange | ScramExchange | None = None

    def receive(self, api_key: int, body: Struct) -> SaslVerdict:
        """The verdict on one decoded request (its version already checked)."""
        if self.state is SaslState.COMPLETE:
            return self._after_completion(api_key)
        if self.state is SaslState.HANDSHAKE:
            if api_key == API_VERSIONS:
                return ADMIT
            if api_key == SASL_HANDSHAKE:
                return self._handshake(body)
            return self._fail(f"{self.registry.api_name(api_key)} request during the SASL "
                              "handshake (rule sasl-handshake-first)")
        if self.state is SaslState.AUTHENTICATE and api_key == SASL_AUTHENTICATE:
            return self._authenticate(body)
        return self._fail(f"{self.registry.api_name(api_key)} request during SASL "
                          "authentication (rule sasl-authenticate-only)")

    def _handshake(self, body: Struct) -> SaslVerdict:
        mech: str = body.mechanism  # type: ignore[attr-defined]
        enabled = list(self.config.mechanisms)
        if mech not in enabled:
            self.state = SaslState.FAILED
            return SaslVerdict(answer=self._handshake_response(ErrorCode.UNSUPPORTED_SASL_MECHANISM, enabled),
                               close=f"unsupported SASL mechanism {mech!r}")
        self.mechanism, self.state = mech, SaslState.AUTHENTICATE
        self._exchange = (PlainExchange(self.config.users) if mech == PLAIN
                          else ScramExchange(mech, self.config.scram, self.config.random_bytes))
        return SaslVerdict(answer=self._handshake_response(ErrorCode.NONE, enabled))

    def _authenticate(self, body: Struct) -> SaslVerdict:
        assert self._exchange is not None and self.mechanism is not None
        try:
            step = self._exchange.step(bytes(body.auth_bytes))  # type: ignore[attr-defined]
        except AuthFailed as e:
            self.state = SaslState.FAILED
            message = e.client_message or ("Authentication failed during authentication due to "
                                           f"invalid credentials with SASL mechanism {self.mechanism}")
            log.info("SASL %s refused: %s", self.mechanism, e.detail)
            return SaslVerdict(answer=self._authenticate_response(
                ErrorCode.SASL_AUTHENTICATION_FAILED, message),
                close=f"SASL {self.mechanism} authentication failed: {e.detail}")
        if step.user is not None:
            self.user, self.state = step.user, SaslState.COMPLETE
            log.info("SASL %s: authenticated %r", self.mechanism, step.user)
        return SaslVerdict(answer=self._authenticate_response(ErrorCode.NONE, None, step.token))

    def _after_completion(self, api_key: int) -> SaslVerdict:
        # These reach KafkaApis once authenticated: answered, the connection stays usable.
        if api_key == SASL_HANDSHAKE:
            return SaslVerdict(answer=self._handshake_response(ErrorCode.ILLEGAL_SASL_STATE, []))
        if api_key == SASL_AUTHENTICATE:
            return SaslVerdict(answer=self._authenticate_response(
                ErrorCode.ILLEGAL_SASL_STATE,
                "SaslAuthenticate request received after successful authentication"))
        return ADMIT

    def _fail(self, reason: str) -> SaslVerdict:
        self.state = SaslState.FAILED
        return SaslVerdict(close=reason)

    def _handshake_response(self, code: ErrorCode, mechanisms: list[str]) -> Struct:
        return self.registry.response(SASL_HANDSHAKE).new(error_code=int(code), mechanisms=mechanisms)

    def _authenticate_response(self, code: ErrorCode, message: str | None,
                               token: bytes = b"") -> Struct:
        return self.registry.response(SASL_AUTHENTICATE).new(
            error_code=int(code), error_message=message, auth_bytes=token)
