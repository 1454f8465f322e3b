"""Kafka error codes the project uses, with Apache Kafka's numbers (``Errors.java``).

The group protocols' codes, plus those the classic coordinator, the offset APIs and the
SASL authentication of a listener return.
The draft's COMPUTE_ASSIGNMENT / INVALID_ASSIGNMENT have no Kafka number and are not here:
the project assigns them where it assigns the draft's API keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import IntEnum


class ErrorCode(IntEnum):
    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    UNKNOWN_TOPIC_OR_PARTITION = 3
    OFFSET_METADATA_TOO_LARGE = 12
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35
    INVALID_REQUEST = 42
    SASL_AUTHENTICATION_FAILED = 58
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    MEMBER_ID_REQUIRED = 79
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    UNSTABLE_OFFSET_COMMIT = 88
    UNKNOWN_TOPIC_ID = 100
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113


def error_text(code: int, more: Mapping[str, int] | None = None) -> str:
    """How a person reads an error code: ``FENCED_MEMBER_EPOCH (110)``. ``more`` names codes
    Kafka lacks (the draft's, numbered by the project or by a target), looked up first."""
    for name, value in (more or {}).items():
        if value == code:
            return f"{name} ({code})"
    try:
        return f"{ErrorCode(code).name} ({code})"
    except ValueError:
        return f"unknown error code ({code})"


__all__ = ["ErrorCode", "error_text"]
