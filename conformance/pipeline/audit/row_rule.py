"""A rule judged row by row over a group's exchanges in wire order, written once as data:
the values it carries from earlier rows (``Prior``: per group, or per group and member) and
one predicate and message over them (``expr``). Its two forms come from that definition:
``check`` (plain Python, the oracle and the baseline) scans the rows keeping each prior's
value so far; ``spark`` adds each prior as a window over the rows before this one
(``windows.before``) and gives the violation column: no Python UDF on the Spark side."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from . import windows
from .expr import Expr, PyFn, coalesce, col, when
from .group import Group, violation

# What every row rule reads beside a row's own fields: where it happened (the answer's
# line/frame, else the request's), its request and answer times (virtual clock first) and
# the member it speaks for (JoinGroup's answer names it, every other request carries it).
DERIVED: dict[str, Expr] = {
    "at": coalesce(col("resp_ref"), col("ref")),
    "req_ms": coalesce(col("req_vtime_ms").double(), col("req_time") * 1000.0),
    "resp_ms": coalesce(col("resp_vtime_ms").double(), col("resp_time") * 1000.0),
    "m": when(col("api") == "JoinGroup", col("resp_member_id")).otherwise(col("member_id")),
}


def prepared(ex: DataFrame) -> DataFrame:
    """Exchanges of groups with the ``DERIVED`` columns, for the rules' windows."""
    ex = ex.where(F.col("group_id").isNotNull())
    for name, x in DERIVED.items():
        ex = ex.withColumn(name, x.spark())
    return ex


@dataclass(frozen=True, eq=False)
class Prior:
    """Over the rows before this one of its group (and of its ``by`` columns' values), in
    wire order: the latest non-null value of ``of`` (``last``), or the largest (``max``);
    null before the first. ``of`` may read the priors declared before it (their values at
    that row). ``name``: its column, unique among all rules (they share one frame)."""

    name: str
    kind: Literal["last", "max"]
    of: Expr
    by: tuple[str, ...] = ()

    @property
    def value(self) -> Expr:
        return col(self.name)


@dataclass(frozen=True, eq=False)
class RowRule:
    """An invariant broken by one row: where ``broken`` holds given the priors, the row is a
    violation of ``requirement`` (a catalogue id) naming ``generation``, ``members`` and ``detail``."""

    name: str
    priors: tuple[Prior, ...]
    broken: Expr
    requirement: Expr
    generation: Expr
    members: tuple[Expr, ...]
    detail: Expr

    @functools.cached_property
    def _py(self) -> _Python:
        local = frozenset([*DERIVED, *(p.name for p in self.priors)])
        exprs = [*(p.of for p in self.priors), self.broken, self.requirement, self.generation, *self.members,
                 self.detail]
        read = {n for x in exprs for n in x.names()} | {k for p in self.priors for k in p.by}
        # only the derived values it reads (``at`` of the violation is ``Ex.at``)
        return _Python([(n, x.py(local)) for n, x in DERIVED.items() if n in read],
                       [(p, p.of.py(local)) for p in self.priors],
                       self.broken.py(local), self.requirement.py(local), self.generation.py(local),
                       [x.py(local) for x in self.members], self.detail.py(local))

    def check(self, g: Group) -> Iterator[dict[str, Any]]:
        """The violations in one group's exchanges (wire order), in plain Python."""
        c = self._py
        # per prior: its name, keys, whether it keeps the largest, its value's form, and its value so far by key
        priors = [(p.name, p.by, p.kind == "max", of, {}) for p, of in c.priors]
        for e in g.exs:
            row, mine, keys = e.row, {}, []
            for name, f in c.derived:
                mine[name] = f(row, mine)
            for name, by, _, _, seen in priors:
                key = tuple(mine[k] if k in mine else row.get(k) for k in by) if by else ()
                keys.append(key)
                mine[name] = seen.get(key)
            if c.broken(row, mine) is True:
                gen = c.generation(row, mine)
                yield violation(self.name, e, c.detail(row, mine), generation=None if gen is None else int(gen),
                                members=[f(row, mine) for f in c.members], requirement=c.requirement(row, mine))
            for (_, _, largest, of, seen), key in zip(priors, keys):
                if (x := of(row, mine)) is not None and not (largest and key in seen and seen[key] >= x):
                    seen[key] = x

    def spark(self, step: DataFrame) -> tuple[DataFrame, Column]:
        """``step`` (``prepared`` exchanges) with this rule's priors as window columns, and
        each row's violation (``windows.violation``)."""
        for p in self.priors:
            agg = F.last(p.of.spark(), ignorenulls=True) if p.kind == "last" else F.max(p.of.spark())
            step = step.withColumn(p.name, agg.over(windows.before(*p.by)))
        return step, windows.violation(self.broken.spark(), self.name, self.requirement.spark(),
                                       self.generation.spark(), F.array(*[x.spark() for x in self.members]),
                                       self.detail.spark())


@dataclass(frozen=True)
class _Python:
    """A rule's Python form, compiled once."""

    derived: list[tuple[str, PyFn]]
    priors: list[tuple[Prior, PyFn]]
    broken: PyFn
    requirement: PyFn
    generation: PyFn
    members: list[PyFn]
    detail: PyFn
