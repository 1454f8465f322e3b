"""Turn a recorded golden run into a transcript another coordinator can be held to: add
matchers for what legitimately varies, and bind the names a replay substitutes.

- Member ids the coordinator generated (the golden broker's suffix is recognisable) are
  captured on first sight (``capture`` with a pattern for the client-id prefix Kafka puts
  there) and referred to afterwards (``ref``): in responses they must recur, in requests
  the captured value is sent.
- Group ids of the scenario are bound names (``group.g1``), listed as unique in the header
  so a replay can give each run its own groups; messages that contain them become
  ``format`` templates.
- Throttle times may be any non-negative number; client hosts any "/address".
- Lists whose order a coordinator does not define are compared as multisets (members of
  JoinGroup / DescribeGroups answers) or, for ListGroups, as "contains these, and every
  listed group fits the request's filters", so other groups on the coordinator do not
  matter.
"""

from __future__ import annotations

import re
from typing import Any

from ...intercept.matchers import join_path
from ..transcript import Event
from .session import GENERATED

_ORDERLESS = {  # (api, kind) -> array paths whose order is not meaningful
    ("JoinGroup", "response"): ["Members"],
    ("DescribeGroups", "response"): ["Groups[*].Members"],
    # The connect draft defines no order for members, connectors or tasks.
    ("ConnectGroupPrepareAssignment", "response"): [
        "Members", "Members[*].ConnectorsAndTasks.Connectors", "Members[*].ConnectorsAndTasks.Tasks"],
}


def annotate(events: list[Event], groups: dict[str, str]) -> dict[str, str]:
    """Add matchers to ``events`` in place; returns the member-id names bound."""
    names: dict[str, str] = {}  # generated member id -> binding name
    by_value = {gid: name for name, gid in groups.items()}
    group_pattern = _alternation(by_value)
    member_pattern = re.compile(r"[^\s\"']+" + GENERATED.pattern.rstrip("$"))
    for ev in events:
        if ev.body is None or not ev.is_frame:
            continue
        match: dict[str, dict[str, Any]] = {}

        def visit(node: Any, path: list[str | int]) -> None:
            if isinstance(node, dict):
                for k, v in node.items():
                    visit(v, path + [k])
            elif isinstance(node, list):
                for i, v in enumerate(node):
                    visit(v, path + [i])
            elif isinstance(node, str):
                m = _string_matcher(node, ev, names, by_value, group_pattern, member_pattern)
                if m is not None:
                    match[join_path(path)] = m

        visit(ev.body, [])
        api = ev.api or ""
        if ev.kind == "response":
            if "ThrottleTimeMs" in ev.body:
                match["ThrottleTimeMs"] = {"min": 0}
            for path in _ORDERLESS.get((api, "response"), []):
                match[path] = {"unordered": True}
            if api == "DescribeGroups":
                for gi, g in enumerate(ev.body.get("Groups", [])):
                    for mi in range(len(g.get("Members", []))):
                        match[f"Groups[{gi}].Members[{mi}].ClientHost"] = {"pattern": "^/"}
            if api == "ConnectGroupHeartbeat" and ev.body.get("Assignment") is not None:
                for f in ("Connectors", "Tasks"):
                    match[f"Assignment.ConnectorsAndTasks.{f}"] = {"unordered": True}
            if api == "ListGroups":
                match["Groups"] = _listing(ev, events)
        ev.match = match
    return names


def _alternation(values: dict[str, str]) -> re.Pattern[str] | None:
    if not values:
        return None
    return re.compile("|".join(re.escape(v) for v in sorted(values, key=len, reverse=True)))


def _string_matcher(value: str, ev: Event, names: dict[str, str], groups: dict[str, str],
                    group_re: re.Pattern[str] | None, member_re: re.Pattern[str]) -> dict[str, Any] | None:
    if value in groups:
        return {"ref": groups[value]}
    if GENERATED.search(value) and GENERATED.sub("", value):
        if value in names:
            return {"ref": names[value]}
        name = names[value] = f"member.{len(names) + 1}"
        prefix = GENERATED.sub("", value)
        if ev.kind == "request":
            return None  # never seen in an answer: a literal the scenario made up
        return {"capture": name, "pattern": f"^{re.escape(prefix)}-"}
    # A message quoting an id: a template over the bound names.
    template, n = value.replace("{", "{{").replace("}", "}}"), 0
    if group_re is not None:
        template, n = group_re.subn(lambda m: "{" + groups[m.group(0)] + "}", template)
    template, k = member_re.subn(lambda m: "{" + names[m.group(0)] + "}" if m.group(0) in names
                                 else m.group(0), template)
    return {"format": template} if n or k else None


def _listing(ev: Event, events: list[Event]) -> dict[str, Any]:
    """ListGroups: our groups must be there; every group listed must fit the filters."""
    request = next((e for e in events if e.kind == "request" and e.conn == ev.conn
                    and e.correlation_id == ev.correlation_id), None)
    each: dict[str, Any] = {}
    body = request.body if request is not None and request.body is not None else {}
    states = body.get("StatesFilter") or []
    types = body.get("TypesFilter") or []
    if states:
        each["GroupState"] = {"pattern": "^(?i:" + "|".join(re.escape(s.strip()) for s in states) + ")$"}
    if types:
        each["GroupType"] = {"pattern": "^(?i:" + "|".join(re.escape(t) for t in types) + ")$"}
    out: dict[str, Any] = {"contains": True}
    if each:
        out["each"] = each
    return out
