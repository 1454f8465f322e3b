"""Strict Kafka wire codec driven by message specs (Apache Kafka's JSON format).

    reg = default_registry()
    jg = reg["JoinGroupRequest"]
    msg = jg.new(group_id="g", protocols=[jg.cls.JoinGroupRequestProtocol(name="x")])
    data = jg.encode(msg, 9)
    assert jg.decode(data, 9) == msg

Framing (headers, size prefixes) is in ``framing``. Every fault in bytes from a peer is
a ``DecodeError`` naming the field path, the byte offset and the rule.
"""

from .errors import DecodeError, EncodeError, SpecError
from .messages import Struct
from .registry import MessageType, Registry, default_registry, default_schema_dir

__all__ = [
    "DecodeError", "EncodeError", "SpecError", "Struct", "MessageType", "Registry",
    "default_registry", "default_schema_dir",
]
