"""Differential checks: the same scripted scenario runs against Apache Kafka and against the
fake broker, exactly alike, through ``fakebroker.client``; every response is compared
field by field after normalising what legitimately varies.

    result = run_differential(scenario, real_bootstrap, fake_bootstrap)
    for d in unaccepted(result, load_accepted()):
        print(d)

A scenario is ``async def scenario(s: Script) -> None``: it opens clients
(``await s.client("w1")``, ``fakebroker.testing.client.ScriptedClient``s; ``Script`` is
the ``fakebroker.testing.session.ScriptedSession`` whose requests are trace steps) and sends requests
with them, each named by its ``label`` (``await w1.join(g, label="w1: first join")``). Its control flow may depend on the
answers (member ids, generations); it runs once per broker, concurrently.

What may vary, and how it is normalised:
- generated member ids: replaced by ``<member:N>``, N counting first appearances on that
  broker (so the same id must show up in the same places on both);
- ``ThrottleTimeMs``: dropped;
- member lists (JoinGroup, DescribeGroups, LeaveGroup) and ListGroups' groups: compared as
  sets (Kafka keeps members in a hash map: its order is not meaningful);
- ListGroups: only this scenario's groups (the broker is shared with other scenarios);
- ApiVersions: only the group APIs' version ranges;
- topic ids (random in Kafka): replaced by ``<topic:N>`` by first appearance.

Everything else must be equal, or be listed in ``fixtures/accepted-differences.yaml``
with the reason.
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..client import ClientError
from ..protocol import Registry, Struct, default_registry
from ..testing.client import HIGHEST, ClientDefaults, Pending, ScriptedClient
from ..testing.session import ScriptedSession

Scenario = Callable[["Script"], Awaitable[None]]
#: How long a request that is expected to park is given to reach the broker before the
#: scenario goes on (a real broker gives no other sign that it has read a request).
SETTLE_S = 0.3
DROPPED = frozenset({"ThrottleTimeMs"})
MEMBER_KEYS = frozenset({"MemberId", "Leader"})
TOPIC_ID_KEYS = frozenset({"TopicId"})
#: Group-related API keys whose version ranges are compared (ApiVersions lists every API):
#: OffsetCommit, OffsetFetch, FindCoordinator, JoinGroup, Heartbeat, LeaveGroup, SyncGroup,
#: DescribeGroups, ListGroups, DeleteGroups, OffsetDelete, ConsumerGroupHeartbeat,
#: ConsumerGroupDescribe.
GROUP_API_KEYS = frozenset({8, 9, 10, 11, 12, 13, 14, 15, 16, 42, 47, 68, 69})


# ---------------------------------------------------------------------------- recording


@dataclass
class Step:
    index: int
    label: str
    api: str
    version: int
    request: dict[str, Any]
    response: dict[str, Any] | None = None
    error: str | None = None  # the request got no answer (closed, timed out, ...)

    def title(self) -> str:
        return f"#{self.index} {self.label} ({self.api} v{self.version})"


@dataclass
class Trace:
    side: str
    steps: list[Step] = field(default_factory=list)
    aborted: str | None = None  # the scenario itself raised (its flow broke)


class Script(ScriptedSession):
    """One run of a scenario against one broker: every request is a step of its trace."""

    defaults = ClientDefaults(protocols=(("sessioned", b"\x00\x02meta"),),
                              highest={**HIGHEST, "DescribeGroups": 5})

    def __init__(self, bootstrap: str, side: str, token: str, registry: Registry,
                 timeout_s: float = 15.0) -> None:
        super().__init__(bootstrap, registry, token, timeout_s=timeout_s)
        self.side = side
        self.trace = Trace(side)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    # ------------------------------------------------------------------ the policy

    def sending(self, label: str, api: str, version: int, body: Struct) -> Step:
        step = Step(len(self.trace.steps) + 1, label, api, version, body.to_json())
        self.trace.steps.append(step)
        return step

    def send_failed(self, pending: Pending, error: ClientError) -> None:
        pending.step.error = str(error)

    async def after_submit(self, pending: Pending) -> None:
        """A request that may park: give the broker ``SETTLE_S`` to read it before the
        scenario goes on."""
        if pending.step.error is None:
            await asyncio.sleep(SETTLE_S)

    def answered(self, pending: Pending, response: Any) -> Any:
        pending.step.response = response.to_json()
        return response

    def no_answer(self, pending: Pending, error: ClientError) -> None:
        """Recorded: the comparison shows it."""
        pending.step.error = str(error)
        return None

    def unexpected(self, what: str, expected: Any, actual: Any) -> None:
        """The comparison shows it; the scenario goes on."""


async def ensure_topic(w: ScriptedClient, name: str, partitions: int, timeout_s: float = 20.0) -> Any:
    """Metadata (v12, auto-creating; not a step: topics differ by nature) until ``name`` has
    ``partitions`` partitions with leaders; returns its topic id. The real broker creates it
    with ``num.partitions``."""
    mt = w.registry["MetadataRequest"].cls
    deadline = asyncio.get_running_loop().time() + timeout_s
    first = True
    while True:
        md = (await w.conn.send(w.registry["MetadataRequest"].new(topics=[mt.MetadataRequestTopic(  # type: ignore[attr-defined]
            topic_id=uuid.UUID(int=0), name=name)], allow_auto_topic_creation=True,
            include_topic_authorized_operations=False), 12)).response
        t = md.topics[0]
        if t.error_code == 0 and len(t.partitions) == partitions and all(
                p.error_code == 0 and p.leader_id >= 0 for p in t.partitions):
            if not first:
                # Just created: give the group coordinator time to see it in its
                # metadata image (else a first assignment may be empty, then fixed).
                await asyncio.sleep(1.0)
            return t.topic_id
        first = False
        if asyncio.get_running_loop().time() > deadline:
            raise RuntimeError(f"topic {name}: error {t.error_code}, {len(t.partitions)} partitions "
                               f"(wanted {partitions})")
        await asyncio.sleep(0.1)


# ---------------------------------------------------------------------------- running


@dataclass
class Result:
    scenario: str
    real: Trace
    fake: Trace
    differences: list[Difference]


async def _run_one(scenario: Scenario, bootstrap: str, side: str, token: str,
                   registry: Registry, timeout_s: float) -> Trace:
    s = Script(bootstrap, side, token, registry, timeout_s)
    try:
        await scenario(s)
    except Exception as e:  # noqa: BLE001 - a broken flow is part of the comparison
        s.trace.aborted = f"{type(e).__name__}: {e}"
    finally:
        await s.close()
    return s.trace


async def run_both(scenario: Scenario, name: str, real: str, fake: str, *,
                   registry: Registry | None = None, timeout_s: float = 15.0,
                   token: str | None = None) -> Result:
    reg = registry or default_registry()
    token = token or f"diff-{name}-{uuid.uuid4().hex[:8]}"
    rt, ft = await asyncio.gather(_run_one(scenario, real, "real", token, reg, timeout_s),
                                  _run_one(scenario, fake, "fake", token, reg, timeout_s))
    return Result(name, rt, ft, compare(rt, ft, token, name))


def run_differential(scenario: Scenario, name: str, real: str, fake: str, **kw: Any) -> Result:
    return asyncio.run(run_both(scenario, name, real, fake, **kw))


# ---------------------------------------------------------------------------- normalising


class Aliases:
    """Generated values -> stable names, by first appearance on one broker."""

    def __init__(self) -> None:
        self.members: dict[str, str] = {}
        self.topics: dict[str, str] = {}

    def topic(self, value: Any) -> Any:
        return _alias(self.topics, "topic", value, "00000000-0000-0000-0000-000000000000")

    def member(self, value: Any) -> Any:
        return _alias(self.members, "member", value, "")


def _alias(names: dict[str, str], kind: str, value: Any, unnamed: str) -> Any:
    """``value``'s name in ``names`` (``<kind:N>``, N by first appearance); a non-string or
    ``unnamed`` as it is."""
    if not isinstance(value, str) or value == unnamed:
        return value
    if value not in names:
        names[value] = f"<{kind}:{len(names) + 1}>"
    return names[value]


def _sort_key(v: Any) -> str:
    return json.dumps(v, sort_keys=True, default=str)


def normalise(tree: Any, aliases: Aliases, token: str, api: str, *, top: bool = True) -> Any:
    if isinstance(tree, list):
        return [normalise(v, aliases, token, api, top=False) for v in tree]
    if not isinstance(tree, dict):
        return tree
    out: dict[str, Any] = {}
    # Scalars first (a message's own MemberId/Leader are aliased before its lists).
    for k, v in tree.items():
        if k in DROPPED or isinstance(v, (list, dict)):
            continue
        out[k] = aliases.member(v) if k in MEMBER_KEYS else aliases.topic(v) if k in TOPIC_ID_KEYS else v
    for k, v in tree.items():
        if k in DROPPED or not isinstance(v, (list, dict)):
            continue
        n = normalise(v, aliases, token, api, top=False)
        if isinstance(n, list) and k == "ApiKeys" and api == "ApiVersions":
            n = [a for a in n if isinstance(a, dict) and a.get("ApiKey") in GROUP_API_KEYS]
        if isinstance(n, list) and k == "Groups" and api == "ListGroups":
            n = [g for g in n if isinstance(g, dict) and str(g.get("GroupId", "")).startswith(token)]
        if isinstance(n, list) and (k == "Members" or (k == "Groups" and api == "ListGroups")):
            n = sorted(n, key=_sort_key)
        out[k] = n
    return out


def normalised_steps(trace: Trace, token: str) -> list[dict[str, Any]]:
    aliases = Aliases()
    out = []
    for st in trace.steps:
        out.append({"request": normalise(st.request, aliases, token, st.api),
                    "response": None if st.response is None else normalise(st.response, aliases, token, st.api),
                    "error": "no answer" if st.error else None})
    return out


# ---------------------------------------------------------------------------- comparing


@dataclass(frozen=True)
class Difference:
    scenario: str
    step: str  # "#3 w2: join with id (JoinGroup v9)"
    path: str  # "response.Members[0].Metadata", or "steps", "flow"
    real: Any
    fake: Any

    def __str__(self) -> str:
        return (f"{self.scenario} {self.step}: {self.path}: Kafka {json.dumps(self.real, default=str)}"
                f" / fake {json.dumps(self.fake, default=str)}")


def _walk(path: str, a: Any, b: Any, out: list[tuple[str, Any, Any]]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in list(a) + [k for k in b if k not in a]:
            _walk(f"{path}.{k}" if path else k, a.get(k, "<absent>"), b.get(k, "<absent>"), out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            _walk(f"{path}[{i}]", x, y, out)
    elif a != b:
        out.append((path, a, b))


def compare(real: Trace, fake: Trace, token: str, scenario: str = "") -> list[Difference]:
    diffs: list[Difference] = []
    rn, fn = normalised_steps(real, token), normalised_steps(fake, token)
    for i in range(max(len(rn), len(fn))):
        rs = real.steps[i] if i < len(rn) else None
        fs = fake.steps[i] if i < len(fn) else None
        title = (rs or fs).title()  # type: ignore[union-attr]
        if rs is None or fs is None or (rs.label, rs.api, rs.version) != (fs.label, fs.api, fs.version):
            diffs.append(Difference(scenario, title, "steps",
                                    rs.title() if rs else "<no step>", fs.title() if fs else "<no step>"))
            break  # the flows diverged: later steps do not line up
        found: list[tuple[str, Any, Any]] = []
        _walk("", rn[i], fn[i], found)
        diffs.extend(Difference(scenario, title, p, a, b) for p, a, b in found)
    if real.aborted != fake.aborted:
        diffs.append(Difference(scenario, "end", "flow", real.aborted, fake.aborted))
    return diffs


# ---------------------------------------------------------------------------- accepted differences


@dataclass(frozen=True)
class Accepted:
    id: str
    scenario: str
    step: str
    path: str
    reason: str
    real: Any = None
    fake: Any = None
    has_real: bool = False
    has_fake: bool = False
    kind: str = "limit"

    def matches(self, d: Difference) -> bool:
        return (glob_match(self.scenario, d.scenario) and glob_match(self.step, d.step)
                and glob_match(self.path, d.path)
                and (not self.has_real or self.real == d.real)
                and (not self.has_fake or self.fake == d.fake))


KINDS = ("defect", "limit", "by-design")


@functools.lru_cache(maxsize=None)
def _glob(pattern: str) -> re.Pattern[str]:
    return re.compile(re.escape(pattern).replace(r"\*", ".*").replace(r"\?", ".") + r"\Z", re.S)


def glob_match(pattern: str, text: str) -> bool:
    """``*`` any run of characters, ``?`` one; everything else literal (brackets too: paths
    are written ``Members[0].MemberId``)."""
    return _glob(pattern).match(text) is not None
ACCEPTED_FILE = Path(__file__).resolve().parents[2] / "fixtures" / "accepted-differences.yaml"


def load_accepted(path: Path = ACCEPTED_FILE) -> list[Accepted]:
    """Entries: ``id``, ``kind``, ``scenario`` / ``step`` / ``path`` (globs), optional
    ``real`` and ``fake`` (exact values), and a non-empty ``reason``."""
    data = yaml.safe_load(path.read_text()) if path.exists() else None
    entries = (data or {}).get("accepted", []) if isinstance(data, dict) else []
    out = []
    seen = set()
    for i, e in enumerate(entries):
        where = f"{path.name}: entry {i + 1}"
        if not isinstance(e, dict):
            raise ValueError(f"{where}: expected a mapping")
        unknown = set(e) - {"id", "kind", "scenario", "step", "path", "reason", "real", "fake"}
        if unknown:
            raise ValueError(f"{where}: unknown keys {sorted(unknown)}")
        for k in ("id", "scenario", "path", "reason"):
            if not isinstance(e.get(k), str) or not e[k].strip():
                raise ValueError(f"{where}: {k!r} must be a non-empty string")
        if e.get("kind") not in KINDS:
            raise ValueError(f"{where}: kind must be one of {', '.join(KINDS)}")
        if e["id"] in seen:
            raise ValueError(f"{where}: duplicate id {e['id']}")
        seen.add(e["id"])
        out.append(Accepted(e["id"], e["scenario"], e.get("step", "*"), e["path"], e["reason"].strip(),
                            e.get("real"), e.get("fake"), "real" in e, "fake" in e, e["kind"]))
    return out


def unaccepted(diffs: list[Difference], accepted: list[Accepted]) -> list[Difference]:
    return [d for d in diffs if not any(a.matches(d) for a in accepted)]


def stale(accepted: list[Accepted], result: Result) -> list[Accepted]:
    """Entries naming this scenario exactly (no glob) that matched none of its differences."""
    return [a for a in accepted if a.scenario == result.scenario
            and not any(a.matches(d) for d in result.differences)]


def _brief(st: Step | None) -> str:
    if st is None:
        return "-"
    if st.error:
        return f"no answer ({st.error})"
    if st.response is None:
        return "not awaited"
    codes = [st.response.get("ErrorCode")] if "ErrorCode" in st.response else []
    for key in ("Groups", "Members"):
        for item in st.response.get(key) or []:
            if isinstance(item, dict) and "ErrorCode" in item:
                codes.append(item["ErrorCode"])
    return "error " + "/".join(str(c) for c in codes) if codes else "answered"


def render_report(result: Result, bad: list[Difference] | None = None,
                  old: list[Accepted] | None = None) -> str:
    """The steps on both sides (error codes) and what is wrong, for a failing test."""
    lines = [f"scenario {result.scenario} (Kafka | fake):"]
    for i in range(max(len(result.real.steps), len(result.fake.steps))):
        r = result.real.steps[i] if i < len(result.real.steps) else None
        f = result.fake.steps[i] if i < len(result.fake.steps) else None
        lines.append(f"  {(r or f).title():70} {_brief(r):>14} | {_brief(f)}")  # type: ignore[union-attr]
    if result.real.aborted or result.fake.aborted:
        lines.append(f"  scenario aborted: Kafka {result.real.aborted!r} / fake {result.fake.aborted!r}")
    if bad:
        lines.append("differences not in fixtures/accepted-differences.yaml:")
        lines.extend(f"  {d.step}: {d.path}: Kafka {json.dumps(d.real, default=str)} / "
                     f"fake {json.dumps(d.fake, default=str)}" for d in bad)
    if old:
        lines.append("accepted differences that no longer occur (delete them):")
        lines.extend(f"  {a.id}: {a.step} {a.path}" for a in old)
    return "\n".join(lines)
