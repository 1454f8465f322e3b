"""The row rules' expression vocabulary: a rule's values, predicate and message written once
as an ``Expr``, then compiled either to a Python function of one row or to a Spark Column.
The Python form follows Spark SQL's semantics, so both forms agree value for value: a null
operand makes a comparison, arithmetic, ``isin`` or lookup null; ``&``/``|`` are three-valued;
``greatest``/``coalesce`` skip nulls; ``when`` takes its branch only on true; ``fmt`` is Java's
``String.format`` (Spark's ``format_string``: see ``java_format``)."""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F

# A compiled Python form: (the row's fields, the rule's own values by name) -> value.
PyFn = Callable[[Mapping[str, Any], Mapping[str, Any]], Any]


def _operator(op: str, reflected: bool = False) -> Callable[[Expr, Any], Expr]:
    """An ``Expr`` method building the node ``op`` of it and a value (a literal unless an ``Expr``)."""
    def method(self: Expr, other: Any) -> Expr:
        return Expr(op, _expr(other), self) if reflected else Expr(op, self, _expr(other))
    return method


class Expr:
    """One node: an operator name and its arguments (``Expr``s, or plain values a node keeps)."""

    __slots__ = ("op", "args")

    def __init__(self, op: str, *args: Any) -> None:
        if op not in _OPS:
            raise ValueError(f"expr: unknown operator {op!r}")
        self.op, self.args = op, args

    def __repr__(self) -> str:
        return f"{self.op}({', '.join(map(repr, self.args))})"

    # Operators build nodes (as Spark's Column does); ``__eq__`` is SQL's =, so no hashing.
    __hash__ = None  # type: ignore[assignment]

    __eq__ = _operator("eq")  # type: ignore[assignment]
    __ne__ = _operator("ne")  # type: ignore[assignment]
    __lt__, __le__, __gt__, __ge__ = _operator("lt"), _operator("le"), _operator("gt"), _operator("ge")
    __add__, __sub__, __mul__ = _operator("add"), _operator("sub"), _operator("mul")
    __rmul__ = _operator("mul", reflected=True)

    __and__, __or__ = _operator("and"), _operator("or")

    def __invert__(self) -> Expr:
        return Expr("not", self)

    def is_null(self) -> Expr:
        return Expr("is_null", self)

    def is_not_null(self) -> Expr:
        return ~self.is_null()

    def isin(self, *values: Any) -> Expr:
        return Expr("isin", self, tuple(values))

    def double(self) -> Expr:
        return Expr("double", self)

    def when(self, cond: Expr, value: Any) -> Expr:
        """``self`` (a ``when``) with one more branch, tried after its own."""
        if self.op != "when":
            raise ValueError("expr: .when follows when()")
        c, v, rest = self.args
        return Expr("when", c, v, rest.when(cond, value) if rest is not None else when(cond, value))

    def otherwise(self, value: Any) -> Expr:
        c, v, rest = self.args
        return Expr("when", c, v, rest.otherwise(value) if rest is not None else _expr(value))

    def names(self) -> set[str]:
        """The columns it reads."""
        if self.op == "col":
            return {self.args[0]}
        return {n for x in self.args if isinstance(x, Expr) for n in x.names()}

    def py(self, local: frozenset[str] = frozenset()) -> PyFn:
        """The Python form: a column named in ``local`` is the rule's own value, else the row's field."""
        return _OPS[self.op][0](self, local)

    def spark(self) -> Column:
        return _OPS[self.op][1](self)


def col(name: str) -> Expr:
    return Expr("col", name)


def lit(value: Any) -> Expr:
    return Expr("lit", value)


def when(cond: Expr, value: Any) -> Expr:
    """``value`` where ``cond`` is true, else null (or the ``otherwise``)."""
    return Expr("when", cond, _expr(value), None)


def coalesce(*xs: Expr) -> Expr:
    return Expr("coalesce", *xs)


def greatest(*xs: Expr) -> Expr:
    return Expr("greatest", *xs)


def lookup(mapping: Mapping[str, str], key: Expr) -> Expr:
    """``mapping[key]``, null where the key is null or not in it."""
    return Expr("lookup", dict(mapping), key)


_SPEC = re.compile(r"%(?:(\.\d+)?f|[sd%])")


def fmt(template: str, *xs: Expr) -> Expr:
    """Java's ``String.format(template, *xs)``: ``%s``, ``%d`` and ``%.Nf`` only."""
    specs = [m.group(0) for m in _SPEC.finditer(template) if m.group(0) != "%%"]
    if len(specs) != len(xs) or _SPEC.sub("", template).count("%"):
        raise ValueError(f"expr: fmt {template!r}: takes %s, %d, %.Nf, one per value")
    return Expr("fmt", template, *xs)


def _expr(x: Any) -> Expr:
    return x if isinstance(x, Expr) else lit(x)


# ---------------------------------------------------------------- the Python forms

def _col_py(e: Expr, local: frozenset[str]) -> PyFn:
    name = e.args[0]
    if name in local:
        return lambda row, mine: mine[name]
    return lambda row, mine: row.get(name)


def _null_propagating(f: Callable[..., Any]) -> Callable[[Expr, frozenset[str]], PyFn]:
    def compile_(e: Expr, local: frozenset[str]) -> PyFn:
        a = e.args[0].py(local)
        if e.args[1].op == "lit":  # the common case, a column against a constant: one call less
            v = e.args[1].args[0]
            return lambda row, mine: None if v is None or (x := a(row, mine)) is None else f(x, v)
        b = e.args[1].py(local)

        def run(row: Mapping[str, Any], mine: Mapping[str, Any]) -> Any:
            x, y = a(row, mine), b(row, mine)
            return None if x is None or y is None else f(x, y)
        return run
    return compile_


def _logic(decisive: bool) -> Callable[[Expr, frozenset[str]], PyFn]:
    """SQL's three-valued ``and`` (``decisive`` False) or ``or`` (True): the first decisive
    operand decides, else null if any operand is null. A chain is one loop, not nested calls."""
    def compile_(e: Expr, local: frozenset[str]) -> PyFn:
        fs = [x.py(local) for x in _chain(e)]

        def run(row: Mapping[str, Any], mine: Mapping[str, Any]) -> Any:
            unknown = False
            for f in fs:
                x = f(row, mine)
                if x is decisive:
                    return decisive
                unknown = unknown or x is None
            return None if unknown else not decisive
        return run
    return compile_


def _chain(e: Expr) -> list[Expr]:
    """The operands of ``e`` and of the nodes of its operator it directly holds, in order."""
    return [y for x in e.args for y in (_chain(x) if x.op == e.op else [x])]


def _not_py(e: Expr, local: frozenset[str]) -> PyFn:
    a = e.args[0].py(local)
    return lambda row, mine: None if (x := a(row, mine)) is None else not x


def _is_null_py(e: Expr, local: frozenset[str]) -> PyFn:
    a = e.args[0].py(local)
    return lambda row, mine: a(row, mine) is None


def _isin_py(e: Expr, local: frozenset[str]) -> PyFn:
    a, values = e.args[0].py(local), frozenset(e.args[1])
    return lambda row, mine: None if (x := a(row, mine)) is None else x in values


def _double_py(e: Expr, local: frozenset[str]) -> PyFn:
    a = e.args[0].py(local)
    return lambda row, mine: None if (x := a(row, mine)) is None else float(x)


def _when_py(e: Expr, local: frozenset[str]) -> PyFn:
    c, v = e.args[0].py(local), e.args[1].py(local)
    rest = e.args[2].py(local) if e.args[2] is not None else (lambda row, mine: None)
    return lambda row, mine: v(row, mine) if c(row, mine) is True else rest(row, mine)


def _coalesce_py(e: Expr, local: frozenset[str]) -> PyFn:
    fs = [x.py(local) for x in e.args]

    def run(row: Mapping[str, Any], mine: Mapping[str, Any]) -> Any:
        for f in fs:
            if (x := f(row, mine)) is not None:
                return x
        return None
    return run


def _greatest_py(e: Expr, local: frozenset[str]) -> PyFn:
    fs = [x.py(local) for x in e.args]

    def run(row: Mapping[str, Any], mine: Mapping[str, Any]) -> Any:
        xs = [x for f in fs if (x := f(row, mine)) is not None]
        return max(xs) if xs else None
    return run


def _lookup_py(e: Expr, local: frozenset[str]) -> PyFn:
    mapping, key = e.args[0], e.args[1].py(local)
    return lambda row, mine: None if (k := key(row, mine)) is None else mapping.get(k)


def java_format(template: str, values: list[Any]) -> str:
    """``String.format`` for ``%s``/``%d``/``%.Nf``: null prints ``null`` (cut to N
    characters); ``%.Nf`` rounds the shortest decimal form half up (Java's Formatter), not
    the binary value half even."""
    it = iter(values)

    def one(m: re.Match[str]) -> str:
        spec = m.group(0)
        if spec == "%%":
            return "%"
        x, digits = next(it), int((m.group(1) or ".6")[1:])
        if x is None:  # Java prints "null", cut to the precision: "%.0f" prints nothing
            return "null"[:digits] if spec.endswith("f") else "null"
        if spec.endswith("f"):
            return format(Decimal(repr(float(x))).quantize(Decimal(1).scaleb(-digits), ROUND_HALF_UP), "f")
        return str(int(x)) if spec == "%d" else str(x)
    return _SPEC.sub(one, template)


def _fmt_py(e: Expr, local: frozenset[str]) -> PyFn:
    template, fs = e.args[0], [x.py(local) for x in e.args[1:]]
    return lambda row, mine: java_format(template, [f(row, mine) for f in fs])


# ---------------------------------------------------------------- the Spark forms

def _binary_spark(f: Callable[[Column, Column], Column]) -> Callable[[Expr], Column]:
    return lambda e: f(e.args[0].spark(), e.args[1].spark())


def _when_spark(e: Expr) -> Column:
    out = F.when(e.args[0].spark(), e.args[1].spark())
    rest = e.args[2]
    while rest is not None and rest.op == "when":  # one CASE with every branch, as Spark chains them
        out, rest = out.when(rest.args[0].spark(), rest.args[1].spark()), rest.args[2]
    return out if rest is None else out.otherwise(rest.spark())


def _lookup_spark(e: Expr) -> Column:
    return F.create_map(*[F.lit(x) for kv in e.args[0].items() for x in kv])[e.args[1].spark()]


_OPS: dict[str, tuple[Callable[[Expr, frozenset[str]], PyFn], Callable[[Expr], Column]]] = {
    "col": (_col_py, lambda e: F.col(e.args[0])),
    "lit": (lambda e, local: (lambda row, mine, v=e.args[0]: v), lambda e: F.lit(e.args[0])),
    **{op: (_null_propagating(f), _binary_spark(f)) for op, f in (
        ("eq", operator.eq), ("ne", operator.ne), ("lt", operator.lt), ("le", operator.le), ("gt", operator.gt),
        ("ge", operator.ge), ("add", operator.add), ("sub", operator.sub), ("mul", operator.mul))},
    "and": (_logic(False), _binary_spark(operator.and_)),
    "or": (_logic(True), _binary_spark(operator.or_)),
    "not": (_not_py, lambda e: ~e.args[0].spark()),
    "is_null": (_is_null_py, lambda e: e.args[0].spark().isNull()),
    "isin": (_isin_py, lambda e: e.args[0].spark().isin(*e.args[1])),
    "double": (_double_py, lambda e: e.args[0].spark().cast("double")),
    "when": (_when_py, _when_spark),
    "coalesce": (_coalesce_py, lambda e: F.coalesce(*[x.spark() for x in e.args])),
    "greatest": (_greatest_py, lambda e: F.greatest(*[x.spark() for x in e.args])),
    "lookup": (_lookup_py, _lookup_spark),
    "fmt": (_fmt_py, lambda e: F.format_string(e.args[0], *[x.spark() for x in e.args[1:]])),
}
