"""The error types of the codec: one for bad specs, one for bad bytes, one for bad values."""

from __future__ import annotations


class SpecError(ValueError):
    """A spec file breaks a rule of the message-spec format.

    ``path`` names the field (for example ``JoinGroupRequest.Protocols.Name``);
    ``rule`` is a short stable id of the rule broken.
    """

    def __init__(self, file: str, path: str, rule: str, message: str) -> None:
        self.file = file
        self.path = path
        self.rule = rule
        self.message = message
        super().__init__(f"{file}: {path}: {rule}: {message}")


class DecodeError(ValueError):
    """Bytes from a peer do not conform to the spec.

    ``path`` is the field path inside the message (``Protocols[1].Metadata``),
    ``offset`` the byte offset in the frame where the fault was found and ``rule``
    a short stable id (``negative-length``, ``trailing-bytes``, ...). ``header``
    carries the request header when it was read before the fault, so a server
    can still answer with the right correlation id.
    """

    def __init__(self, path: str, offset: int, rule: str, message: str) -> None:
        self.path = path
        self.offset = offset
        self.rule = rule
        self.message = message
        self.header: object | None = None
        super().__init__(path, offset, rule, message)

    def prepend(self, segment: str) -> DecodeError:
        """Prefix the field path with the enclosing field (used while unwinding)."""
        self.path = f"{segment}.{self.path}" if self.path else segment
        self.args = (self.path, self.offset, self.rule, self.message)
        return self

    def shift(self, base: int) -> DecodeError:
        """Make a sub-buffer offset absolute."""
        self.offset += base
        self.args = (self.path, self.offset, self.rule, self.message)
        return self

    def __str__(self) -> str:
        return f"{self.path or '<frame>'} at offset {self.offset}: {self.rule}: {self.message}"


class EncodeError(ValueError):
    """A message object cannot be encoded at the requested version."""

    def __init__(self, path: str, rule: str, message: str) -> None:
        self.path = path
        self.rule = rule
        self.message = message
        super().__init__(path, rule, message)

    def prepend(self, segment: str) -> EncodeError:
        self.path = f"{segment}.{self.path}" if self.path else segment
        self.args = (self.path, self.rule, self.message)
        return self

    def __str__(self) -> str:
        return f"{self.path or '<message>'}: {self.rule}: {self.message}"
