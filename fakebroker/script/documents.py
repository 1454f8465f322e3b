"""YAML / JSON input files that keep, for every value, the line it was written on, so a
refusal can say ``plan.yaml:7: faults[1].action.error: ...`` (the file, the line, the path,
the rule)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

PathKey = tuple[str | int, ...]


class DocumentError(ValueError):
    def __init__(self, source: str, line: int | None, path: str, rule: str, message: str) -> None:
        self.source, self.line, self.path, self.rule, self.message = source, line, path, rule, message
        where = f"{source}:{line}" if line else source
        super().__init__(f"{where}: {path + ': ' if path else ''}{message} (rule: {rule})")


@dataclass
class Document:
    data: Any
    source: str
    lines: dict[PathKey, int] = field(default_factory=dict)

    def line_of(self, path: PathKey) -> int | None:
        """The line of ``path``, or of its nearest ancestor that has one."""
        p = tuple(path)
        while True:
            if p in self.lines:
                return self.lines[p]
            if not p:
                return None
            p = p[:-1]

    def error(self, path: PathKey, rule: str, message: str) -> DocumentError:
        return DocumentError(self.source, self.line_of(path), dotted(path), rule, message)


def dotted(path: PathKey) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _node_lines(node: yaml.Node, path: PathKey, out: dict[PathKey, int]) -> None:
    out[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            key = k.value if isinstance(k, yaml.ScalarNode) else str(k.value)
            out[path + (key,)] = k.start_mark.line + 1
            _node_lines(v, path + (key,), out)
            out[path + (key,)] = k.start_mark.line + 1  # the key's line, not its value's
    elif isinstance(node, yaml.SequenceNode):
        for i, v in enumerate(node.value):
            _node_lines(v, path + (i,), out)


def parse_document(text: str, source: str) -> Document:
    """Parse YAML (JSON is accepted as YAML's subset, and parsed strictly as JSON when the
    file looks like JSON, so JSON errors read as JSON errors)."""
    stripped = text.lstrip()
    if not stripped:
        raise DocumentError(source, 1, "", "empty", "the file is empty")
    if stripped.startswith(("{", "[")):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise DocumentError(source, e.lineno, "", "json-syntax",
                                f"{e.msg} at column {e.colno}") from None
    else:
        try:
            data = yaml.safe_load(text)
        except yaml.MarkedYAMLError as e:
            mark = e.problem_mark or e.context_mark
            raise DocumentError(source, mark.line + 1 if mark else None, "", "yaml-syntax",
                                " ".join(str(x) for x in (e.context, e.problem) if x)) from None
        except yaml.YAMLError as e:
            raise DocumentError(source, None, "", "yaml-syntax", str(e)) from None
    lines: dict[PathKey, int] = {}
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        if node is not None:
            _node_lines(node, (), lines)
    except yaml.YAMLError:
        pass  # JSON that YAML 1.1 reads differently: no line numbers, still the data
    return Document(data, source, lines)


def load_document(path: str | Path) -> Document:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise DocumentError(str(p), None, "", "encoding", f"not UTF-8: {e.reason}") from None
    except OSError as e:
        raise DocumentError(str(p), None, "", "unreadable", f"cannot read: {e.strerror or e}") from None
    return parse_document(text, str(p))
