"""YAML / JSON input files that keep, for every value, the line it was written on, so a
refusal can say ``plan.yaml:7: faults[1].action.error: ...`` (the file, the line, the path,
the rule).

YAML aliases are expanded by whoever walks the data, so a few hundred bytes of nested
aliases can stand for billions of values: the composed graph's expanded size is counted
(linear in the file) and refused beyond MAX_YAML_VALUES before anything walks it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..parse_guard import MAX_DEPTH, InputLimit, guarded, loads_json

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


MAX_YAML_VALUES = 50_000  # values after alias expansion; a large plan has a few thousand


def _expanded_size(root: yaml.Node) -> int:
    """How many nodes ``root`` stands for once every alias is expanded (each shared node
    counted once per reference), computed once per distinct node, without recursion."""
    size: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in size:
            continue
        kids: list[yaml.Node] = []
        if isinstance(node, yaml.MappingNode):
            kids = [n for kv in node.value for n in kv]
        elif isinstance(node, yaml.SequenceNode):
            kids = list(node.value)
        if children_done:
            size[id(node)] = 1 + sum(size.get(id(k), 0) for k in kids)
            if size[id(node)] > MAX_YAML_VALUES:
                return size[id(node)]
        else:
            stack.append((node, True))
            stack.extend((k, False) for k in kids if id(k) not in size)
    return size[id(root)]


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that stops at MAX_DEPTH levels of nesting while scanning: PyYAML's scanner
    is quadratic in flow nesting and its composer recursive, so the limit must act first."""

    def _deeper(self, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise InputLimit("nesting-too-deep", f"nested deeper than {MAX_DEPTH} levels "
                             f"(line {self.get_mark().line + 1})")

    def fetch_flow_collection_start(self, TokenClass: Any) -> None:  # noqa: N803 - PyYAML's name
        self._deeper(self.flow_level + len(self.indents) + 1)
        super().fetch_flow_collection_start(TokenClass)  # type: ignore[misc]

    def add_indent(self, column: int) -> bool:
        self._deeper(self.flow_level + len(self.indents) + 1)
        return bool(super().add_indent(column))  # type: ignore[misc]


def _parse_yaml(text: str, source: str) -> tuple[Any, yaml.Node | None]:
    loader = _BoundedLoader(text)
    try:
        node = guarded(loader.get_single_node)
        if node is None:
            return None, None
        n = _expanded_size(node)
        if n > MAX_YAML_VALUES:
            raise DocumentError(source, None, "", "alias-expansion",
                                f"aliases expand to more than {MAX_YAML_VALUES} values "
                                f"({n} counted so far)")
        return guarded(loader.construct_document, node), node
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        raise DocumentError(source, mark.line + 1 if mark else None, "", "yaml-syntax",
                            " ".join(str(x) for x in (e.context, e.problem) if x)) from None
    except yaml.YAMLError as e:
        raise DocumentError(source, None, "", "yaml-syntax", str(e)) from None
    finally:
        loader.dispose()


def _check_keys(doc: Document) -> None:
    """Every mapping key is a string (YAML also allows numbers, lists, ...)."""
    stack: list[tuple[Any, PathKey]] = [(doc.data, ())]
    while stack:
        value, path = stack.pop()
        if isinstance(value, dict):
            for k, v in value.items():
                if not isinstance(k, str):
                    raise doc.error(path, "key-not-string",
                                    f"key {k!r} is a {type(k).__name__}; keys must be strings")
                stack.append((v, path + (k,)))
        elif isinstance(value, list):
            stack.extend((v, path + (i,)) for i, v in enumerate(value))


def parse_document(text: str, source: str) -> Document:
    """Parse YAML (JSON is accepted as YAML's subset, and parsed strictly as JSON when the
    file looks like JSON, so JSON errors read as JSON errors)."""
    stripped = text.lstrip()
    if not stripped:
        raise DocumentError(source, 1, "", "empty", "the file is empty")
    try:
        if stripped.startswith(("{", "[")):
            try:
                data = loads_json(text)
            except json.JSONDecodeError as e:
                raise DocumentError(source, e.lineno, "", "json-syntax",
                                    f"{e.msg} at column {e.colno}") from None
            node = None
            try:  # line numbers only (JSON has no aliases; its depth is checked)
                node = yaml.compose(text, Loader=yaml.SafeLoader)
            except (yaml.YAMLError, RecursionError):
                pass  # JSON that YAML 1.1 reads differently: no line numbers, still the data
        else:
            data, node = _parse_yaml(text, source)
    except InputLimit as e:
        raise DocumentError(source, None, "", e.rule, e.message) from None
    lines: dict[PathKey, int] = {}
    if node is not None:
        _node_lines(node, (), lines)
    doc = Document(data, source, lines)
    _check_keys(doc)
    return doc


def load_document(path: str | Path) -> Document:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise DocumentError(str(p), None, "", "encoding", f"not UTF-8: {e.reason}") from None
    except OSError as e:
        raise DocumentError(str(p), None, "", "unreadable", f"cannot read: {e.strerror or e}") from None
    return parse_document(text, str(p))
