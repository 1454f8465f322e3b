"""Turn a recorded golden run into a transcript another coordinator can be held to: add
matchers for what legitimately varies, and bind the names a replay substitutes.

- Member ids the coordinator generated (the golden broker's suffix is recognisable) are
  captured on first sight (``capture`` with a pattern for the client-id prefix Kafka puts
  there) and referred to afterwards (``ref``): in responses they must recur, in requests
  the captured value is sent.
- Group ids of the scenario are bound names (``group.g1``), listed as unique in the header
  so a replay can give each run its own groups; messages that contain them become
  ``format`` templates.
- Generations are bound, never literal: the first one a group's JoinGroup answers is
  captured (``generation.g1``), every later one, answered or sent, is that plus the
  recorded difference (``{"ref": "generation.g1", "plus": 1}``), so a coordinator that
  numbers generations from 0 is judged as one that starts at 1.
- Throttle times may be any non-negative number.
- Pinned fields: a step fails only on a field a requirement or the message definition pins.
  The fields no requirement pins are marked ``unpinned`` (a difference is a note in the
  report): an error answer's echoes (a JoinGroup / SyncGroup refused carries only its error
  code, and MEMBER_ID_REQUIRED the member id it hands out), a LeaveGroup member's MemberId,
  DescribeGroups' ClientHost (the address text is the broker's own), ErrorMessage and
  AuthorizedOperations unless asked for, an unknown group's other fields, and OffsetFetch's
  empty Metadata (null or ""). A scenario names what its requirement pins beyond these
  (``pins`` of its ``@golden``: CLS-DESC-01 the message, CLS-DESC-03 the operations).
- Lists whose order a coordinator does not define are compared as multisets (members of
  JoinGroup / DescribeGroups answers) or, for ListGroups, as "contains these, and every
  listed group fits the request's filters", so other groups on the coordinator do not
  matter.
"""

from __future__ import annotations

import re
from typing import Any

from fakebroker.intercept.matchers import join_path, wildcard
from fakebroker.exchange.pairing import request_of
from fakebroker.exchange.transcript import Event
from .session import GENERATED

_ORDERLESS = {  # (api, kind) -> array paths whose order is not meaningful
    ("JoinGroup", "response"): ["Members"],
    ("DescribeGroups", "response"): ["Groups[*].Members"],
    # The connect draft defines no order for members, connectors or tasks.
    ("ConnectGroupPrepareAssignment", "response"): [
        "Members", "Members[*].ConnectorsAndTasks.Connectors", "Members[*].ConnectorsAndTasks.Tasks"],
    # No order is defined for the topics and partitions of an offset answer.
    ("OffsetCommit", "response"): ["Topics", "Topics[*].Partitions"],
    ("OffsetFetch", "response"): ["Topics", "Topics[*].Partitions", "Groups", "Groups[*].Topics",
                                  "Groups[*].Topics[*].Partitions"],
}
_ECHOES = ("JoinGroup", "SyncGroup")  # an error answer of these pins its ErrorCode only
_KEPT = ("ErrorCode", "ThrottleTimeMs")
MEMBER_ID_REQUIRED = 79
_GENERATION_FIELDS = ("GenerationId", "GenerationIdOrMemberEpoch")


def annotate(events: list[Event], groups: dict[str, str],
             pins: dict[str, tuple[str, ...]] | None = None) -> dict[str, str]:
    """Add matchers to ``events`` in place; returns the member-id names bound. ``pins``:
    API -> field paths (``[*]`` for any index) the scenario's requirement pins although
    they are unpinned by default."""
    names: dict[str, str] = {}  # generated member id -> binding name
    by_value = {gid: name for name, gid in groups.items()}
    group_pattern = _alternation(by_value)
    member_pattern = re.compile(r"[^\s\"']+" + GENERATED.pattern.rstrip("$"))
    requests = request_of(events)
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
            if api == "ConnectGroupHeartbeat" and ev.body.get("Assignment") is not None:
                for f in ("Connectors", "Tasks"):
                    match[f"Assignment.ConnectorsAndTasks.{f}"] = {"unordered": True}
            if api == "ListGroups":
                match["Groups"] = _listing(requests.get(id(ev)))
            kept = (pins or {}).get(api, ())
            for path in unpinned_fields(api, ev.body, requests.get(id(ev))):
                if wildcard(path) not in kept:
                    match[path] = {**match.get(path, {}), "unpinned": True}
        ev.match = match
    _bind_generations(events, requests, by_value)
    return names


def unpinned_fields(api: str, body: dict[str, Any], request: Event | None) -> list[str]:
    """The fields of a response that no requirement pins by default (see the module's doc)."""
    code = body.get("ErrorCode")
    if api in _ECHOES and code:
        return [k for k in body if k not in _KEPT and not (k == "MemberId" and code == MEMBER_ID_REQUIRED)]
    if api == "LeaveGroup":
        return [f"Members[{i}].MemberId" for i in range(len(body.get("Members") or []))]
    if api == "DescribeGroups":
        asked = bool(((request.body if request is not None else None) or {}).get("IncludeAuthorizedOperations"))
        out = []
        for gi, g in enumerate(body.get("Groups") or []):
            at = f"Groups[{gi}]"
            out += [f"{at}.ErrorMessage"] + ([] if asked else [f"{at}.AuthorizedOperations"])
            if g.get("ErrorCode"):
                out += [f"{at}.{k}" for k in g if k not in ("ErrorCode", "ErrorMessage", "GroupId",
                                                             "AuthorizedOperations")]
            else:
                out += [f"{at}.Members[{mi}].ClientHost" for mi in range(len(g.get("Members") or []))]
        return out
    if api == "OffsetFetch":
        tops = [("", body)] + [(f"Groups[{i}].", g) for i, g in enumerate(body.get("Groups") or [])]
        return [f"{at}Topics[{ti}].Partitions[{pi}].Metadata"
                for at, node in tops for ti, t in enumerate(node.get("Topics") or [])
                for pi, part in enumerate(t.get("Partitions") or []) if part.get("Metadata") in ("", None)]
    return []


def _bind_generations(events: list[Event], requests: dict[int, Event], groups: dict[str, str]) -> None:
    """The first generation a group's JoinGroup answers (no error) is captured; every
    generation after it, in requests and answers of that group, refers to it plus the
    recorded difference. Negative values (no generation) and numbers sent before any
    answer (made up by the scenario) stay literal."""
    base: dict[str, int] = {}  # binding name -> the generation captured
    for ev in events:
        if ev.body is None or not ev.is_frame:
            continue
        request = ev if ev.kind == "request" else requests.get(id(ev))
        gid = ((request.body if request is not None else None) or {}).get("GroupId")
        if gid not in groups:
            continue
        name = "generation." + groups[gid].removeprefix("group.")
        for f in _GENERATION_FIELDS:
            v = ev.body.get(f)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0 or f in ev.match:
                continue
            if name in base:
                ev.match[f] = {"ref": name, **({"plus": v - base[name]} if v != base[name] else {})}
            elif ev.kind == "response" and ev.api == "JoinGroup" and not ev.body.get("ErrorCode"):
                base[name] = v
                ev.match[f] = {"capture": name}


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


def _listing(request: Event | None) -> dict[str, Any]:
    """ListGroups: our groups must be there; every group listed must fit the filters
    (``request``: the one the listing answers)."""
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
