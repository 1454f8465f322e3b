"""The exchange's field table (``fakebroker.exchange.fields.FIELDS``) as Spark column
expressions: each line's half of the exchange (what its request or response body carries),
then the exchange's columns from the two halves and Connect's embedded bytes decoded. A
table row needs nothing here; a reader (``how``) needs its Spark form in ``READERS``."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyspark.sql import Column
from pyspark.sql import functions as F

from fakebroker.exchange.fields import FIELDS, Field, Take

# Body fields kept as JSON text (their type differs between APIs: ``Assignment`` is hex for
# SyncGroup and an object for the draft's heartbeat), with the shape a path into them reads.
JSON_TEXT = {"Assignment": "Error int, ConnectorsAndTasks struct<Connectors: array<string>, "
                           "Tasks: array<struct<ConnectorId: string, TaskId: int>>>"}


def at(body: Column, path: str) -> Column:
    """The body's field at a dotted path; through a JSON-text field, its parsed form."""
    first, *rest = path.split(".")
    node = body[first]
    if rest and first in JSON_TEXT:
        node = F.from_json(node, JSON_TEXT[first])
    for part in rest:
        node = node[part]
    return node


def draft_units(c: Column) -> Column:
    """The draft's ConnectorsAndTasks as Connect's unit names, sorted (``fields.unit_names``)."""
    tasks = F.transform(F.coalesce(c["Tasks"], F.array()), lambda t: F.when(
        t["TaskId"] == -1, t["ConnectorId"]).otherwise(F.concat(t["ConnectorId"], F.lit("-"), t["TaskId"])))
    names = F.array_sort(F.array_distinct(F.concat(F.coalesce(c["Connectors"], F.array().cast("array<string>")),
                                                   tasks)))
    return F.when(c.isNull(), F.lit(None)).otherwise(names)


def group_of(group_id: Column, groups: Column) -> Column:
    """The group an exchange speaks for, in its API's own layout (``fields.group_of``):
    ``Groups`` is JSON text (OffsetFetch v8+ lists objects, DescribeGroups names)."""
    listed = F.when(F.json_array_length(groups) == 1, F.get_json_object(groups, "$[0].GroupId"))
    return F.coalesce(F.nullif(group_id, F.lit("")), listed)


# The Spark form of each reader of ``fakebroker.exchange.fields.READERS``.
READERS: dict[str, Callable[[Column, str], Column]] = {
    "value": at,
    "group": lambda body, path: group_of(at(body, path), body["Groups"]),
    "member_or_first": lambda body, path: F.coalesce(F.nullif(at(body, path), F.lit("")),
                                                     body["Members"][0]["MemberId"]),
    "names": lambda body, path: F.transform(F.coalesce(at(body, path), F.array()), lambda x: x["Name"]),
    "units": lambda body, path: draft_units(at(body, path)),
    "assignors": lambda body, path: F.transform(F.coalesce(at(body, path), F.array()), lambda a: F.struct(
        a["Name"].alias("name"), a["MinimumVersion"].alias("min_version"),
        a["MaximumVersion"].alias("max_version"))),
}


def _chain(f: Field, api: Column, value: Callable[[Take], Column], keep: Callable[[Take], bool]) -> Column | None:
    """``f``'s value by API, over the takes ``keep`` admits (None: it admits none)."""
    out: Column | None = None
    for name, t in f.by_api:
        if keep(t):
            out = (F.when(api == name, value(t)) if out is None else out.when(api == name, value(t)))
    if f.default is not None and keep(f.default):
        v = value(f.default)
        return v if out is None else out.otherwise(v)
    return out


def half(body: Column, api: Column, side: str, *extra: Column, fields: Sequence[Field] = FIELDS) -> Column:
    """A request (``side`` "request") or response line's half of the exchange: every column
    it carries a take of, read from its ``body``, with ``extra`` columns beside them."""
    cols = []
    for f in fields:
        c = _chain(f, api, lambda t: READERS[t.how](body, t.path), lambda t: t.side == side)
        if c is not None:
            cols.append(c.alias(f.name))
    return F.struct(*cols, *extra)


def columns(q: Column, p: Column, embedded: Column, api: Column,
            fields: Sequence[Field] = FIELDS) -> list[Column]:
    """The exchange's columns, in the table's order, from its request's half ``q``, its
    response's ``p`` and Connect's embedded bytes decoded (``embedded``, null where none)."""
    source = {"request": lambda t, n: q[n], "response": lambda t, n: p[n],
              "embedded": lambda t, n: embedded[t.path]}
    out = []
    for f in fields:
        sides = {t.side for t in f.takes()}
        if len(sides) == 1 and sides != {"embedded"}:  # a half is null where the API has no take
            c: Column = source[sides.pop()](None, f.name)
        else:  # the embedded decoder's keys are not by API: the table says which API takes one
            chained = _chain(f, api, lambda t, n=f.name: source[t.side](t, n), lambda t: True)
            c = F.lit(None) if chained is None else chained
        out.append(c.alias(f.name))
    return out
