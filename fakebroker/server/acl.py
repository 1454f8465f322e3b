"""Access control lists, as Kafka's StandardAuthorizer decides them, for the resources a
group coordinator touches (groups, topics, the cluster).

A rule allows or denies one principal (``User:alice``, or ``User:*``) one operation on
resources named exactly, by prefix (``connect-*``) or all (``*``). A DENY that matches wins;
otherwise an ALLOW must match (Kafka's ``allow.everyone.if.no.acl.found=false``). READ, WRITE
and ALL imply DESCRIBE, as in Kafka.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ANONYMOUS = "User:ANONYMOUS"  # Kafka's principal for a connection that did not authenticate


class Operation(enum.Enum):
    READ = "Read"
    WRITE = "Write"
    DESCRIBE = "Describe"
    ALL = "All"


class ResourceType(enum.Enum):
    GROUP = "Group"
    TOPIC = "Topic"
    CLUSTER = "Cluster"


_IMPLIES_DESCRIBE = (Operation.READ, Operation.WRITE, Operation.ALL)


@dataclass(frozen=True)
class AclRule:
    allow: bool
    principal: str  # "User:NAME" or "User:*"
    operation: Operation
    resource: ResourceType
    pattern: str  # exact name, "*" (any), or "PREFIX*"

    def matches(self, principal: str, op: Operation, resource: ResourceType, name: str) -> bool:
        if self.resource is not resource or self.principal not in (principal, "User:*"):
            return False
        if self.operation is not Operation.ALL and self.operation is not op and not (
                op is Operation.DESCRIBE and self.allow and self.operation in _IMPLIES_DESCRIBE):
            return False
        if self.pattern == "*":
            return True
        if self.pattern.endswith("*"):
            return name.startswith(self.pattern[:-1])
        return name == self.pattern


@dataclass(frozen=True)
class Acls:
    rules: Sequence[AclRule]

    def allows(self, principal: str, op: Operation, resource: ResourceType, name: str) -> bool:
        hits = [r for r in self.rules if r.matches(principal, op, resource, name)]
        return bool(hits) and all(r.allow for r in hits)


def _enum(kind: type[enum.Enum], text: str, where: str) -> enum.Enum:
    for member in kind:
        if member.value.lower() == text.lower():
            return member
    choices = ", ".join(m.value for m in kind)
    raise ValueError(f"{where}: {kind.__name__.lower()} {text!r} is not one of {choices}")


def parse_acl_file(path: Path) -> Acls:
    """``ALLOW|DENY PRINCIPAL OPERATION TYPE:PATTERN`` per line, ``#`` comments; e.g.
    ``allow User:alice Read Group:connect-*``. Errors name the line and the rule."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: cannot read the ACL file ({e})") from None
    rules = []
    for n, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"{path}:{n}"
        words = line.split()
        if len(words) != 4:
            raise ValueError(f"{where}: expected 'ALLOW|DENY PRINCIPAL OPERATION TYPE:PATTERN', "
                             f"got {len(words)} word(s)")
        verdict, principal, op, res = words
        if verdict.lower() not in ("allow", "deny"):
            raise ValueError(f"{where}: {verdict!r} is neither allow nor deny")
        if not principal.startswith("User:") or principal == "User:":
            raise ValueError(f"{where}: principal {principal!r} must be User:NAME or User:*")
        kind, sep, pattern = res.partition(":")
        if not sep or not pattern:
            raise ValueError(f"{where}: resource {res!r} must be TYPE:PATTERN (e.g. Group:connect-*)")
        if "*" in pattern[:-1]:
            raise ValueError(f"{where}: pattern {pattern!r}: '*' only as the whole name or at its end")
        resource = _enum(ResourceType, kind, where)
        rules.append(AclRule(verdict.lower() == "allow", principal,
                             _enum(Operation, op, where), resource, pattern))  # type: ignore[arg-type]
    if not rules:
        raise ValueError(f"{path}: no rules (an empty ACL file would refuse everything)")
    return Acls(tuple(rules))
