"""Declarative fault plans: YAML or JSON, checked against ``schemas/faultplan.schema.json``
and the specs, evaluated purely, installed on a broker as two hooks.

    version: 1
    faults:
      - name: second-heartbeat-of-w1
        api: Heartbeat
        match: {MemberId: {pattern: "^w1-"}}
        nth: 2
        action: {error: REBALANCE_IN_PROGRESS}
      - api: SyncGroup
        times: all
        action: {delay_ms: 2000}
      - api: JoinGroup                  # the next JoinGroup (once is the default)
        action: {close: true}
      - api: "@coordinator"             # the group APIs and FindCoordinator
        times: all
        window: {from_ms: 0, for_ms: 5000}
        action: {error: COORDINATOR_NOT_AVAILABLE}

A plan is refused as a whole before anything runs: every problem names the file, the line,
the path in the plan and the rule broken (``DocumentError``).

Semantics: faults are tried in order for each call; a fault matches a call of one of its
APIs on its side whose fields match (a ``[*]`` path: any element), while the broker's clock
is in its window. Every fault counts every call it matches, whether or not an earlier
fault acted on it, so "the 2nd Heartbeat" means the 2nd one sent. A fault acts on the
occurrences it names (``nth``; or ``skip`` then ``times``; by default the first), and the
first fault that acts decides. ``capture`` in a match binds for the whole plan, so a later
fault can ``ref`` a member id captured by an earlier one.
"""

from __future__ import annotations

import copy
import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from ..protocol import Registry, default_schema_dir
from .documents import Document, DocumentError, PathKey, load_document, parse_document
from ..intercept.error_response import resolve_error
from ..intercept.hooks import (Action, Call, Close, Continue, Delay, Drop, ErrorResponse, Hook, Hooks,
                    Respond)
from ..intercept.matchers import Bindings, check_value, matcher_problems, set_path, spec_path_problem, values_at

GROUP_APIS = (8, 9, 11, 12, 13, 14, 15, 16)  # what the classic coordinator answers
FIND_COORDINATOR = 10
ALIASES = {"@group": GROUP_APIS, "@coordinator": GROUP_APIS + (FIND_COORDINATOR,)}


@dataclass(frozen=True)
class FaultAction:
    error: int | None = None
    message: str | None = None
    respond: dict[str, Any] | None = None
    set: dict[str, Any] | None = None
    delay_ms: int | None = None
    real: bool = False
    drop: bool = False
    close: bool = False

    def describe(self) -> str:
        parts = []
        if self.delay_ms is not None:
            parts.append(f"delay {self.delay_ms} ms{' (real)' if self.real else ''}")
        if self.set:
            parts.append("set " + ", ".join(self.set))
        if self.error is not None:
            parts.append(f"error {self.error}")
        parts += [w for w, on in (("respond", self.respond is not None), ("drop", self.drop),
                                  ("close", self.close)) if on]
        return ", then ".join(parts) or "pass"


@dataclass(frozen=True)
class Fault:
    name: str
    api_keys: frozenset[int] | None  # None: every API
    side: str
    match: dict[str, Any]  # path -> literal or matcher
    client_id: Any  # literal, matcher, or _ANY
    skip: int
    times: int | None  # None: all
    window_from: int
    window_until: int | None
    action: FaultAction


_ANY = object()


@dataclass
class Plan:
    faults: list[Fault]
    source: str = "<plan>"
    description: str = ""


# ---------------------------------------------------------------------------- loading

@functools.cache
def _validator() -> Draft202012Validator:
    schema = json.loads((default_schema_dir() / "faultplan.schema.json").read_text(encoding="utf-8"))
    return Draft202012Validator(schema)


def load_plan(path: str | Path, registry: Registry) -> Plan:
    return check_plan(load_document(path), registry)


def parse_plan(text: str, registry: Registry, source: str = "<plan>") -> Plan:
    return check_plan(parse_document(text, source), registry)


def check_plan(doc: Document, registry: Registry) -> Plan:
    """The plan, or the first problem as a DocumentError (schema rules first, in document
    order, then the rules a schema cannot state)."""
    errors = list(_validator().iter_errors(doc.data))
    if errors:
        # The most precise error of the earliest place in the file.
        def key(e: Any) -> tuple[int, int]:
            return (doc.line_of(tuple(e.absolute_path)) or 0, -len(e.absolute_path))
        e = min(errors, key=key)
        if e.validator == "required":
            # A misspelt key makes a required one missing: naming the misspelling helps more.
            e = next((x for x in errors if x.validator == "additionalProperties"
                      and x.absolute_path == e.absolute_path), e)
        if e.validator in ("oneOf", "anyOf") and e.context:
            # The branch that got furthest says what is wrong (a number below a minimum,
            # rather than "'all' was expected").
            e = max(e.context, key=lambda c: (len(c.absolute_path), c.validator not in ("type", "const")))
        path = tuple(e.absolute_path)
        if e.validator == "additionalProperties" and isinstance(e.instance, dict):
            extra = [k for k in e.instance if k not in e.schema.get("properties", {})]
            if extra:  # point at the unexpected key itself
                raise doc.error(path + (extra[0],), "additionalProperties",
                                f"unexpected key {extra[0]!r} (allowed: "
                                f"{', '.join(e.schema.get('properties', {}))})")
        raise doc.error(path, str(e.validator), e.message)
    faults = [_fault(doc, registry, i, f) for i, f in enumerate(doc.data["faults"])]
    _check_refs(doc, faults)
    return Plan(faults, doc.source, doc.data.get("description", ""))


def _resolve_apis(doc: Document, registry: Registry, where: PathKey, api: Any) -> frozenset[int] | None:
    items = api if isinstance(api, list) else [api]
    keys: set[int] = set()
    for i, a in enumerate(items):
        at = where + (i,) if isinstance(api, list) else where
        if a == "*":
            return None
        if isinstance(a, str) and a in ALIASES:
            keys.update(ALIASES[a])
            continue
        try:
            key = registry.by_api_name(str(a))
            registry.request(key)
        except KeyError as e:
            raise doc.error(at, "api-unknown", str(e.args[0])) from None
        keys.add(key)
    return frozenset(keys)


def _fault(doc: Document, registry: Registry, i: int, f: dict[str, Any]) -> Fault:
    here: PathKey = ("faults", i)
    keys = _resolve_apis(doc, registry, here + ("api",), f["api"])
    side = f.get("side", "request")
    for path, m in (f.get("match") or {}).items():
        at = here + ("match", path)
        if isinstance(m, dict):
            probs = matcher_problems(m)
            if probs:
                raise doc.error(at, "matcher-invalid", probs[0])
        _check_path(doc, registry, keys, "request", at, path)
    cid = f.get("client_id", _ANY)
    if isinstance(cid, dict) and matcher_problems(cid):
        raise doc.error(here + ("client_id",), "matcher-invalid", matcher_problems(cid)[0])
    if "nth" in f and ("skip" in f or "times" in f):
        raise doc.error(here + ("nth",), "occurrence-conflict",
                        "nth names one occurrence: it excludes skip and times")
    skip = f["nth"] - 1 if "nth" in f else f.get("skip", 0)
    times_raw = f.get("times", 1)
    times = None if times_raw == "all" else times_raw
    w = f.get("window") or {}
    if "until_ms" in w and "for_ms" in w:
        raise doc.error(here + ("window",), "window-conflict", "give until_ms or for_ms, not both")
    start = w.get("from_ms", 0)
    until = w.get("until_ms", start + w["for_ms"] if "for_ms" in w else None)
    if until is not None and until <= start:
        raise doc.error(here + ("window",), "window-empty", f"the window [{start}, {until}) is empty")
    action = _action(doc, registry, here + ("action",), keys, side, f["action"])
    name = f.get("name") or f"fault-{i + 1}"
    return Fault(name, keys, side, dict(f.get("match") or {}), cid, skip, times, start, until, action)


def _check_path(doc: Document, registry: Registry, keys: frozenset[int] | None, kind: str,
                at: PathKey, path: str) -> None:
    if keys is None:
        return  # every API: a path only needs to exist where it is used
    problems = []
    for key in sorted(keys):
        mt = registry.request(key) if kind == "request" else registry.response(key)
        problem = spec_path_problem(mt.spec.struct, path)
        if problem is None:
            return  # it exists in at least one of the APIs
        problems.append(problem)
    raise doc.error(at, "field-unknown", problems[0])


def _action(doc: Document, registry: Registry, at: PathKey, keys: frozenset[int] | None,
            side: str, a: dict[str, Any]) -> FaultAction:
    terminals = [k for k in ("error", "respond", "drop", "close") if k in a]
    if len(terminals) > 1:
        raise doc.error(at, "action-conflict", f"{' and '.join(terminals)} exclude each other")
    if "set" in a and terminals:
        raise doc.error(at + ("set",), "action-conflict", f"set edits and goes on; it excludes {terminals[0]}")
    if "message" in a and "error" not in a:
        raise doc.error(at + ("message",), "action-incomplete", "message needs error")
    if "real" in a and "delay_ms" not in a:
        raise doc.error(at + ("real",), "action-incomplete", "real needs delay_ms")
    error = None
    if "error" in a:
        try:
            error = resolve_error(a["error"])
        except ValueError as e:
            raise doc.error(at + ("error",), "error-unknown", str(e)) from None
    if "respond" in a:
        if keys is None or len(keys) != 1:
            raise doc.error(at + ("respond",), "respond-api", "respond needs exactly one API")
        (key,) = keys
        try:
            registry.response(key).cls.from_json(a["respond"])
        except ValueError as e:
            raise doc.error(at + ("respond",), "respond-body", str(e)) from None
    for path in a.get("set") or {}:
        _check_path(doc, registry, keys, side, at + ("set", path), path)
    return FaultAction(error=error, message=a.get("message"), respond=a.get("respond"),
                       set=a.get("set"), delay_ms=a.get("delay_ms"), real=a.get("real", False),
                       drop=a.get("drop", False), close=a.get("close", False))


def _check_refs(doc: Document, faults: list[Fault]) -> None:
    captured = {m["capture"] for f in faults for m in [*f.match.values(), f.client_id]
                if isinstance(m, dict) and "capture" in m}
    for i, f in enumerate(faults):
        for path, m in [*f.match.items(), ("client_id", f.client_id)]:
            if isinstance(m, dict) and "ref" in m and m["ref"] not in captured:
                where = ("faults", i, "match", path) if path != "client_id" else ("faults", i, "client_id")
                raise doc.error(where, "ref-unbound", f"no fault captures {m['ref']!r}")


# ---------------------------------------------------------------------------- evaluation

@dataclass
class PlanRuntime:
    """The plan's state while a broker runs: per-fault counts and the plan's bindings."""

    plan: Plan
    counts: list[int] = field(default_factory=list)
    bindings: Bindings = field(default_factory=dict)
    acted: list[tuple[str, int]] = field(default_factory=list)  # (fault name, broker ms)

    def __post_init__(self) -> None:
        self.counts = [0] * len(self.plan.faults)

    def wants(self, side: str, api_key: int) -> bool:
        return any(f.side == side and (f.api_keys is None or api_key in f.api_keys)
                   for f in self.plan.faults)

    def decide(self, side: str, api_key: int, request: dict[str, Any], client_id: str | None,
               now_ms: int) -> Fault | None:
        """The fault that acts on this call (counting it for every fault it matches)."""
        chosen = None
        for i, f in enumerate(self.plan.faults):
            if f.side != side or (f.api_keys is not None and api_key not in f.api_keys):
                continue
            if now_ms < f.window_from or (f.window_until is not None and now_ms >= f.window_until):
                continue
            trial = dict(self.bindings)
            if not self._matches(f, request, client_id, trial):
                continue
            self.bindings.update(trial)
            self.counts[i] += 1
            n = self.counts[i]
            if chosen is None and n > f.skip and (f.times is None or n <= f.skip + f.times):
                chosen = f
                self.acted.append((f.name, now_ms))
        return chosen

    @staticmethod
    def _matches(f: Fault, request: dict[str, Any], client_id: str | None, bindings: Bindings) -> bool:
        if f.client_id is not _ANY and not _value_matches(f.client_id, client_id, bindings):
            return False
        for path, want in f.match.items():
            if not any(_value_matches(want, v, bindings) for v in values_at(request, path)):
                return False
        return True


def _value_matches(want: Any, actual: Any, bindings: Bindings) -> bool:
    if isinstance(want, dict):
        trial = dict(bindings)
        if check_value(want, actual, trial) is None:
            bindings.update(trial)
            return True
        return False
    if isinstance(want, bool) or isinstance(actual, bool):
        return type(want) is type(actual) and want == actual
    return bool(want == actual)


def to_action(call: Call, a: FaultAction) -> Action:
    """A fault's action as a hook action (edits are applied to the call here)."""
    terminal: Action = Continue()
    if a.error is not None:
        terminal = ErrorResponse(a.error, a.message)
    elif a.respond is not None:
        terminal = Respond(copy.deepcopy(a.respond))
    elif a.drop:
        terminal = Drop()
    elif a.close:
        terminal = Close()
    elif a.set:
        target = call.response if call.side == "response" else call.request
        assert target is not None
        data = target.to_json()
        for path, value in a.set.items():
            set_path(data, path, value)
        edited = type(target).from_json(data)
        if call.side == "response":
            call.response = edited
        else:
            call.request = edited
    if a.delay_ms is not None:
        return Delay(a.delay_ms, then=terminal, real=a.real)
    return terminal


def install(hooks: Hooks, plan: Plan, start_ms: int = 0) -> tuple[PlanRuntime, list[Hook]]:
    """Install a plan as two kept hooks (request side, response side). Windows are on the
    broker's clock from ``start_ms``."""
    if start_ms:
        plan = Plan([Fault(**{**f.__dict__, "window_from": f.window_from + start_ms,
                              "window_until": None if f.window_until is None else f.window_until + start_ms})
                     for f in plan.faults], plan.source, plan.description)
    runtime = PlanRuntime(plan)

    def make(side: str) -> Any:
        def fault_plan(call: Call) -> Action | None:
            if not runtime.wants(side, call.api_key):
                return None
            fault = runtime.decide(side, call.api_key, call.request.to_json(), call.client_id,
                                   call.now_ms)
            if fault is None:
                return None
            call.keep()
            call.label = f"fault:{fault.name}"
            return to_action(call, fault.action)
        return fault_plan

    installed = [hooks.add(make(side), side=side, keep=True, name="fault-plan")
                 for side in ("request", "response")
                 if any(f.side == side for f in plan.faults)]
    return runtime, installed


__all__ = ["Plan", "Fault", "FaultAction", "PlanRuntime", "DocumentError", "load_plan",
           "parse_plan", "check_plan", "install", "to_action"]
