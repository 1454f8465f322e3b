"""SASL authentication of a connection, sans IO: the mechanisms (PLAIN, SCRAM-SHA-256/512)
and the per-connection gate that enforces Kafka's order (ApiVersions and SaslHandshake, then
SaslAuthenticate until the mechanism completes, then everything else)."""

from .credentials import SaslConfig, parse_users_file
from .gate import SaslGate, SaslVerdict

__all__ = ["SaslConfig", "SaslGate", "SaslVerdict", "parse_users_file"]
