"""A chaos schedule: timed operations and faults, generated from a seed (same seed, same
schedule), read from and written to scenario files. Pure: no I/O but the file helpers."""

from __future__ import annotations

import random
import tomllib
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

# Every kind of operation, with what its fields mean. Faults end ``for_ms`` after ``at_ms``.
KINDS: dict[str, str] = {
    "stop": "worker stopped cleanly (SIGTERM), started again after for_ms",
    "kill": "worker killed (SIGKILL), started again after for_ms",
    "pause": "worker paused (SIGSTOP) for for_ms, then SIGCONT",
    "join": "a new worker joins the group",
    "coord-drop": "the worker's group connections closed unanswered for for_ms",
    "coord-delay": "the worker's group requests delayed by delay_ms for for_ms",
    "coord-error": "the worker's group requests answered with error for for_ms",
    "topic-fail": "Produce/Fetch answered with error for for_ms",
    "topic-delay": "Produce/Fetch delayed by delay_ms for for_ms",
    "rest-restart": "POST /connectors/{c}/restart (include_tasks) through the worker's REST",
    "rest-reconfigure": "PUT /connectors/{c}/config with tasks.max changed",
    "rest-delete": "DELETE /connectors/{c}, created again with its config after for_ms",
}
FAULTS = frozenset({"stop", "kill", "pause", "coord-drop", "coord-delay", "coord-error", "topic-fail",
                    "topic-delay", "rest-delete"})
COORDINATOR_ERRORS = ("NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE", "REBALANCE_IN_PROGRESS")
# Retriable produce/fetch errors, by Kafka's name and code (the protocol's error table).
TOPIC_ERRORS = {"NOT_LEADER_OR_FOLLOWER": 6, "REQUEST_TIMED_OUT": 7}


@dataclass(frozen=True)
class Op:
    at_ms: int
    kind: str
    worker: int = 0          # slot: 0..workers-1 the initial ones, then joined ones in order
    for_ms: int = 0
    delay_ms: int = 0
    error: str = ""
    connector: int = 0       # index into the target's seeded connectors (sorted by name)
    include_tasks: bool = False

    @property
    def ends_ms(self) -> int:
        return self.at_ms + self.for_ms

    def describe(self) -> str:
        extra = {"for_ms": self.for_ms, "delay_ms": self.delay_ms, "error": self.error,
                 "include_tasks": self.include_tasks}
        shown = " ".join(f"{k}={v}" for k, v in extra.items() if v)
        return f"t={self.at_ms}ms {self.kind} worker={self.worker} connector={self.connector} {shown}".strip()


@dataclass(frozen=True)
class Knobs:
    """What the generator may draw: each kind's weight (0 turns it off) and the length."""

    ops: int = 8
    weights: dict[str, float] = field(default_factory=lambda: {k: 1.0 for k in KINDS})
    max_workers: int = 5


@dataclass(frozen=True)
class Schedule:
    seed: int
    workers: int
    duration_ms: int
    session_timeout_ms: int
    ops: tuple[Op, ...]

    @property
    def last_fault_end_ms(self) -> int:
        return max((o.ends_ms for o in self.ops if o.kind in FAULTS), default=0)

    def with_ops(self, ops: tuple[Op, ...]) -> Schedule:
        return replace(self, ops=tuple(sorted(ops, key=lambda o: o.at_ms)))


def generate(seed: int, workers: int, duration_ms: int, session_timeout_ms: int, connectors: int,
             knobs: Knobs = Knobs()) -> Schedule:
    """``knobs.ops`` operations at random times in the first 60% of ``duration_ms`` (the rest
    is for liveness), each drawn by weight; pauses outlast the session half of the time."""
    rng = random.Random(seed)
    kinds = [k for k in KINDS if knobs.weights.get(k, 0) > 0]
    if not kinds:
        raise ValueError("every operation's weight is 0: nothing to schedule")
    weights = [knobs.weights[k] for k in kinds]
    window = max(1, int(duration_ms * 0.6))
    ops, slots = [], workers
    for at in sorted(rng.randrange(window) for _ in range(knobs.ops)):
        kind = rng.choices(kinds, weights)[0]
        if kind == "join" and slots >= knobs.max_workers:
            kind = "rest-restart"
        op = Op(at, kind, worker=rng.randrange(slots), connector=rng.randrange(max(1, connectors)))
        if kind == "join":
            op = replace(op, worker=slots)
            slots += 1
        elif kind == "pause":
            op = replace(op, for_ms=rng.choice([session_timeout_ms // 2, session_timeout_ms * 3 // 2]))
        elif kind in ("stop", "kill", "coord-drop", "topic-fail", "rest-delete"):
            op = replace(op, for_ms=rng.randrange(500, session_timeout_ms))
        elif kind in ("coord-delay", "topic-delay"):
            op = replace(op, for_ms=rng.randrange(500, session_timeout_ms), delay_ms=rng.randrange(100, 3000))
        if kind == "coord-error":
            op = replace(op, for_ms=rng.randrange(200, 3000), error=rng.choice(COORDINATOR_ERRORS))
        elif kind == "topic-fail":
            op = replace(op, error=rng.choice(sorted(TOPIC_ERRORS)))
        elif kind == "rest-restart":
            op = replace(op, include_tasks=rng.random() < 0.5)
        ops.append(op)
    return Schedule(seed, workers, duration_ms, session_timeout_ms, tuple(ops))


# ---------------------------------------------------------------- scenario files

def dumps(s: Schedule, target: str, evidence: str = "", violated: tuple[str, ...] = ()) -> str:
    """The schedule as a scenario file (TOML): a regression case of ``target``; ``violated``:
    the rules (catalogue ids, ``safety``, ``liveness``) the schedule broke when it was found."""
    def val(v: Any) -> str:
        return ("true" if v else "false") if isinstance(v, bool) else (str(v) if isinstance(v, int) else f'"{v}"')
    lines = [f"# chaos scenario: {evidence}" if evidence else "# chaos scenario", "[scenario]",
             f'target = "{target}"', f"seed = {s.seed}", f"workers = {s.workers}",
             f"duration_ms = {s.duration_ms}", f"session_timeout_ms = {s.session_timeout_ms}"]
    if violated:
        lines.append("violated = [" + ", ".join(f'"{r}"' for r in violated) + "]")
    for o in s.ops:
        lines += ["", "[[op]]"] + [f"{k} = {val(v)}" for k, v in asdict(o).items()
                                   if k in ("at_ms", "kind") or v != getattr(Op, k, None)]
    return "\n".join(lines) + "\n"


class ScenarioError(ValueError):
    """A scenario file that cannot be read: one line naming the file, field and rule."""


@dataclass(frozen=True)
class Scenario:
    """A scenario file: the schedule, the target it was found on, and the rules it broke."""

    path: Path
    target: str
    schedule: Schedule
    violated: tuple[str, ...]

    @property
    def name(self) -> str:
        """The file's name without .toml: the case id under ``conformance run``."""
        return self.path.name.removesuffix(".toml")


def read_scenario(path: Path) -> Scenario:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ScenarioError(f"{path}: not readable: {e.strerror}") from None
    target, schedule = loads(text, str(path))
    raw = tomllib.loads(text)["scenario"].get("violated", [])
    if not isinstance(raw, list) or not all(isinstance(r, str) and r for r in raw):
        raise ScenarioError(f"{path}: scenario.violated: a list of rule names (rule scenario-violated)")
    return Scenario(path, target, schedule, tuple(raw))


def loads(text: str, path: str = "<scenario>") -> tuple[str, Schedule]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(f"{path}: not a TOML file: {e}") from None
    sc = data.get("scenario")
    if not isinstance(sc, dict):
        raise ScenarioError(f"{path}: [scenario]: missing (rule scenario-table)")
    for key in ("target", "seed", "workers", "duration_ms", "session_timeout_ms"):
        if key not in sc:
            raise ScenarioError(f"{path}: scenario.{key}: missing (rule scenario-fields)")
    ops = []
    for n, raw in enumerate(data.get("op", [])):
        if raw.get("kind") not in KINDS:
            raise ScenarioError(f"{path}: op[{n}].kind: {raw.get('kind')!r} is not one of {sorted(KINDS)} "
                                "(rule op-kind)")
        unknown = set(raw) - set(Op.__dataclass_fields__)
        if unknown:
            raise ScenarioError(f"{path}: op[{n}].{sorted(unknown)[0]}: unknown field (rule op-fields)")
        try:
            ops.append(Op(**raw))
        except TypeError as e:
            raise ScenarioError(f"{path}: op[{n}]: {e} (rule op-fields)") from None
    return str(sc["target"]), Schedule(int(sc["seed"]), int(sc["workers"]), int(sc["duration_ms"]),
                                       int(sc["session_timeout_ms"]), tuple(ops))
