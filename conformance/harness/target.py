"""Target files: TOML describing one implementation under test, validated, as a dataclass.

    target = load_target("fixtures/targets/fakebroker.toml")
    target.kind, target.protocols, target.timing.min_session_timeout_ms

An invalid file raises ``TargetError`` whose ``problems`` each name the field and the
reason (JSON Schema ``schemas/target.schema.json`` first, then the named rules below).
"""

from __future__ import annotations

import json
import re
import shlex
import string
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..catalogue.requirements import rule_schema as schema_violations
from .mutant_declarations import PREFIX as MUTANT_PREFIX
from .mutant_declarations import DeclarationError, mutant_target_data
from fakebroker.parse_guard import InputLimit, guarded
from fakebroker.protocol import default_schema_dir
from fakebroker.realkafka.settings import (KAFKA_INITIAL_REBALANCE_DELAY_MS,
                                           KAFKA_MAX_SESSION_TIMEOUT_MS,
                                           KAFKA_MIN_SESSION_TIMEOUT_MS)

SCHEMA_FILE = "target.schema.json"
PLACEHOLDERS = frozenset({
    "bootstrap", "group", "worker_id", "rest_port", "python", "connect_protocol",
    "session_timeout_ms", "rebalance_timeout_ms", "heartbeat_interval_ms",
    "scheduled_rebalance_delay_ms", "topic_prefix", "worker_host", "connect"})
# What the harness gives a coordinator's command (harness.broker_process): a free loopback
# port it then connects to, or a file the command writes its host:port to.
BROKER_PLACEHOLDERS = frozenset({"port", "ready_file", "python"})
# A coordinator's ready_line: the line the command prints once it serves, naming its address.
READY_LINE_PLACEHOLDERS = frozenset({"bootstrap"})
# What the harness gives a seed command (run_seed_command) and a host command (start_worker_host).
SEED_PLACEHOLDERS = frozenset({"bootstrap", "topic_prefix", "connect_protocol", "python", "connect"})
HOST_PLACEHOLDERS = frozenset({"python", "worker_host", "connect"})
COMMAND_KEYS = ("command", "seed_command", "host_command")
# ``[...]`` in a command template: an optional part, left out when the suite leaves a
# placeholder in it unset (to observe the implementation's own default for that setting).
OPTIONAL_PART = re.compile(r"\[([^\[\]]*)\]")
# The draft leaves these open; the project's numbers (schemas/ERRATA.md, "Numbers chosen").
DEFAULT_API_KEYS = {"ConnectGroupHeartbeat": 1000, "ConnectGroupPrepareAssignment": 1001,
                    "ConnectGroupInstallAssignment": 1002}
DEFAULT_ERROR_CODES = {"COMPUTE_ASSIGNMENT": 1000, "INVALID_ASSIGNMENT": 1001}


class TargetError(ValueError):
    def __init__(self, path: str, problems: list[str]) -> None:
        super().__init__(f"invalid target file {path}:\n  " + "\n  ".join(problems))
        self.path = path
        self.problems = problems


@dataclass(frozen=True)
class Timing:
    clock: str = "real"
    # Kafka's broker defaults (one source with `python -m fakebroker.realkafka start`).
    min_session_timeout_ms: int = KAFKA_MIN_SESSION_TIMEOUT_MS    # group.min.session.timeout.ms
    max_session_timeout_ms: int = KAFKA_MAX_SESSION_TIMEOUT_MS    # group.max.session.timeout.ms
    initial_rebalance_delay_ms: int = KAFKA_INITIAL_REBALANCE_DELAY_MS  # group.initial.rebalance.delay.ms
    session_timeout_ms: int = 10_000          # Connect's session.timeout.ms
    rebalance_timeout_ms: int = 60_000        # Connect's rebalance.timeout.ms
    heartbeat_interval_ms: int = 3_000        # Connect's heartbeat.interval.ms
    scheduled_rebalance_delay_ms: int = 300_000  # scheduled.rebalance.max.delay.ms
    wait_scale: float = 1.0
    startup_timeout_s: float = 30.0
    # A broker's own rules, where they are not Kafka's: session_bounds = false for a
    # coordinator that refuses no session timeout (no group.min/max.session.timeout.ms), and
    # the generation a new group's first rebalance gives (Kafka: 1; some brokers count from 0).
    session_bounds: bool = True
    first_generation: int = 1


@dataclass(frozen=True)
class GroupLog:
    """``[group_log]``: the topic a coordinator writes its connect-group records to."""

    topic: str
    bootstrap: str | None = None   # None: the coordinator's own bootstrap
    real_kafka: bool = False       # builtin: the harness starts a real Kafka for the log


@dataclass(frozen=True)
class Target:
    path: str
    name: str
    kind: str
    protocols: frozenset[str]
    capabilities: frozenset[str]
    builtin: str | None
    bootstrap: str | None
    command: str | None
    timing: Timing
    ready_line: str | None = None  # a coordinator command's line naming its address ({bootstrap})
    upstream: str | None = None  # "real-kafka": the fake broker proxies to a real Kafka
    launch: str | None = None    # "real-kafka": the harness runs the coordinator (a real Kafka)
    overlap_stops: bool = False  # a finished case's workers may stop while the next case runs
    seed_command: str | None = None  # writes the workers' shared work once per test process
    host_command: str | None = None  # runs once per test process; its workers run in it ({worker_host})
    description: str = ""
    implementation_name: str = ""
    implementation_version: str = "unknown"
    artefacts: tuple[str, ...] = ()  # glob patterns of the tested files (conformance.reports.provenance)
    connect_protocol: str = "sessioned"
    mutant: str | None = None
    api_keys: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_API_KEYS))
    error_codes: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_ERROR_CODES))
    group_log: GroupLog | None = None
    connect: str = ""  # {connect}: the Connect build its commands run (a version or a directory)
    # A coordinator: API -> the highest version to certify it at, below what it advertises
    # ([max_versions]; fakebroker.negotiation applies it).
    max_versions: dict[str, int] = field(default_factory=dict)
    chaos_scenarios: tuple[Path, ...] = ()  # [chaos] scenarios: regression cases (conformance.chaos.regression)

    @property
    def virtual_clock(self) -> bool:
        return self.timing.clock == "virtual"

    def error_code(self, name: str) -> int:
        """The number of an error by name: the target's own ([error_codes], the draft's
        project-chosen codes included) before Kafka's."""
        if name in self.error_codes:
            return self.error_codes[name]
        from fakebroker.protocol.error_codes import ErrorCode
        return int(ErrorCode[name])

    def claims(self, protocols: tuple[str, ...] | frozenset[str]) -> frozenset[str]:
        """The claimed protocols among ``protocols``."""
        return self.protocols & frozenset(protocols)

    def can_leave_unset(self, placeholder: str) -> bool:
        """Whether the command template can start the implementation without setting
        ``placeholder``: it stands only inside optional parts ``[...]``."""
        if self.command is None:
            return False
        outside = OPTIONAL_PART.sub("", self.command)
        return placeholder in _placeholders(self.command) and placeholder not in _placeholders(outside)

    def takes(self, placeholder: str) -> bool:
        """Whether the command template holds ``placeholder`` (anywhere)."""
        return self.command is not None and placeholder in _placeholders(self.command)

    def render_command(self, *, unset: frozenset[str] = frozenset(), **values: Any) -> str:
        """The command with ``values``; an optional part ``[...]`` holding a placeholder of
        ``unset`` is left out, every other one kept without its brackets."""
        assert self.command is not None
        if not all(self.can_leave_unset(n) for n in unset):
            raise ValueError(f"{self.path}: the command always sets {', '.join(sorted(unset))}")
        return _fill(self.command, unset, {"connect": shlex.quote(self.connect), **values})

    def render_broker_command(self, **values: Any) -> str:
        """A coordinator's command with ``values`` (port, ready_file, python)."""
        assert self.command is not None
        return _fill(self.command, frozenset(), values, BROKER_PLACEHOLDERS)

    def render_seed_command(self, **values: Any) -> str:
        """The seed command with ``values`` (its optional parts kept)."""
        assert self.seed_command is not None
        return _fill(self.seed_command, frozenset(), {"connect": shlex.quote(self.connect), **values})

    def render_host_command(self, **values: Any) -> str:
        """The host command with ``values`` (its optional parts kept)."""
        assert self.host_command is not None
        return _fill(self.host_command, frozenset(), {"connect": shlex.quote(self.connect), **values})


def _fill(template: str, unset: frozenset[str], values: dict[str, Any],
          known: frozenset[str] = PLACEHOLDERS) -> str:
    text = OPTIONAL_PART.sub(lambda m: "" if _placeholders(m.group(1)) & unset else m.group(1), template)
    return text.format(**{k: values.get(k, "") for k in known})


def _placeholders(template: str) -> set[str]:
    return {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}


# ---------------------------------------------------------------- rules

def rule_schema(data: Any, schema: dict[str, Any]) -> list[str]:
    """The target schema's violations, each at its TOML path (``start.command``)."""
    return schema_violations(data, schema, sep=".", top="(top level)")


def rule_start_one_way(data: dict[str, Any]) -> list[str]:
    """[start] names exactly one of builtin, bootstrap, command."""
    ways = [k for k in ("builtin", "bootstrap", "command", "launch") if k in data["start"]]
    if len(ways) != 1:
        return [f"start: give exactly one of builtin, bootstrap, command, launch; got {ways or 'none'} "
                f"(rule start-one-way)"]
    return []


def rule_kind_start_match(data: dict[str, Any]) -> list[str]:
    """A worker is started by a command; a coordinator's command starts a broker, which needs
    none of a worker's start keys."""
    start = data["start"]
    if data["kind"] == "worker" and "command" not in start:
        return ["start.command: a worker target needs a command template (rule kind-start-match)"]
    if data["kind"] == "worker" and "ready_line" in start:
        return ["start.ready_line: only a coordinator's command announces its address "
                "(rule kind-start-match)"]
    if data["kind"] == "coordinator":
        return [f"start.{k}: starts workers; a coordinator target has none (rule kind-start-match)"
                for k in ("upstream", "seed_command", "host_command", "overlap_stops") if k in start]
    return []


def rule_broker_address_known(data: dict[str, Any]) -> list[str]:
    """A coordinator's command tells the harness where it listens in exactly one way: it
    listens on the {port} given, writes host:port to the {ready_file} given, or prints its
    ready_line."""
    start = data["start"]
    if data["kind"] != "coordinator" or "command" not in start:
        if "ready_line" in start and "command" not in start:
            return ["start.ready_line: needs start.command (rule broker-address-known)"]
        return []
    try:
        names = _placeholders(start["command"])
    except ValueError:
        return []  # placeholders-known says why
    ways = [w for w, given in (("{port}", "port" in names), ("{ready_file}", "ready_file" in names),
                              ("ready_line", "ready_line" in start)) if given]
    if len(ways) != 1:
        return [f"start.command: a coordinator's command gives its address in exactly one way, "
                f"{{port}} or {{ready_file}} in the command or a ready_line; got {', '.join(ways) or 'none'} "
                f"(rule broker-address-known)"]
    if "ready_line" in start:
        try:
            line_names = _placeholders(start["ready_line"])
        except ValueError as e:
            return [f"start.ready_line: not a valid template: {e} (rule broker-address-known)"]
        if line_names != {"bootstrap"}:
            return ["start.ready_line: must contain {bootstrap} (where the broker listens) and no other "
                    "placeholder (rule broker-address-known)"]
    return []


def rule_upstream_needs_command(data: dict[str, Any]) -> list[str]:
    """Only a worker started by a command is put behind a fake broker fronting a real Kafka."""
    if "upstream" in data["start"] and "command" not in data["start"]:
        return ["start.upstream: needs start.command (a worker target) (rule upstream-needs-command)"]
    return []


def rule_overlap_stops_needs_command(data: dict[str, Any]) -> list[str]:
    """Only workers the harness starts (by a command) are stopped by it."""
    if data["start"].get("overlap_stops") and "command" not in data["start"]:
        return ["start.overlap_stops: needs start.command (a worker target) (rule overlap-stops-needs-command)"]
    return []


def rule_seed_command_needs_upstream(data: dict[str, Any]) -> list[str]:
    """The seed command writes into the real Kafka the harness starts for a worker target."""
    if "seed_command" in data["start"] and data["start"].get("upstream") != "real-kafka":
        return ["start.seed_command: needs start.upstream = \"real-kafka\" (rule seed-command-needs-upstream)"]
    return []


def rule_host_command_with_its_workers(data: dict[str, Any]) -> list[str]:
    """A host runs the workers of the command; the command names it by {worker_host}, and
    only a host command gives it a value."""
    start = data["start"]
    host, command = start.get("host_command"), start.get("command") or ""
    out: list[str] = []
    if host is not None and "command" not in start:
        out.append("start.host_command: needs start.command, whose workers it runs (rule host-command-with-its-workers)")
    for key, text in (("host_command", host), ("command", command if host is not None else None)):
        if text is not None and "{worker_host}" not in text:
            out.append(f"start.{key}: with a host_command, must contain {{worker_host}} "
                       f"(rule host-command-with-its-workers)")
    if host is None and "{worker_host}" in command:
        out.append("start.command: {worker_host} needs start.host_command, which starts that host "
                   "(rule host-command-with-its-workers)")
    return out


def rule_launch_version(data: dict[str, Any]) -> list[str]:
    """A launched real Kafka is the version the harness provisions; the certificate must not
    name another."""
    if data["start"].get("launch") != "real-kafka":
        return []
    from fakebroker.realkafka.provision import KAFKA_VERSION
    version = data.get("implementation", {}).get("version", "auto")
    if version not in ("auto", KAFKA_VERSION):
        return [f"implementation.version: {version!r}, but start.launch runs Apache Kafka "
                f"{KAFKA_VERSION} (give \"auto\" or {KAFKA_VERSION!r}) (rule launch-version)"]
    return []


def _takes_connect(data: dict[str, Any]) -> bool:
    return any("{connect}" in (data["start"].get(k) or "") for k in COMMAND_KEYS)


def rule_connect_build(data: dict[str, Any]) -> list[str]:
    """One Connect build, named once, and run: connect_version or connect_libs (not both), a
    command taking it ({connect}), and a certified version that is the build's."""
    impl = data.get("implementation", {})
    named = [k for k in ("connect_version", "connect_libs") if k in impl]
    if len(named) > 1:
        return ["implementation: connect_version and connect_libs both name the Connect build; give one "
                "(rule connect-build)"]
    if named and not _takes_connect(data):
        return [f"implementation.{named[0]}: no command takes {{connect}}, so the build is never run "
                f"(rule connect-build)"]
    version = impl.get("connect_version")
    if version is not None and impl.get("version", version) != version:
        return [f"implementation.version: {impl['version']!r}, but connect_version runs Connect {version} "
                f"(leave version out, or give {version!r}) (rule connect-build)"]
    return []


def rule_placeholders_known(data: dict[str, Any]) -> list[str]:
    """Every {placeholder} of a command template is one the harness fills in for it."""
    out: list[str] = []
    command_known = BROKER_PLACEHOLDERS if data["kind"] == "coordinator" else PLACEHOLDERS
    for key, known in (("command", command_known), ("seed_command", SEED_PLACEHOLDERS),
                       ("host_command", HOST_PLACEHOLDERS)):
        command = data["start"].get(key)
        if command is None:
            continue
        try:
            names = _placeholders(command)
        except ValueError as e:
            out.append(f"start.{key}: not a valid template: {e} (rule placeholders-known)")
            continue
        unknown = sorted(n for n in names if n not in known)
        if unknown:
            out.append(f"start.{key}: unknown placeholder(s) {', '.join('{' + n + '}' for n in unknown)}; "
                       f"known: {', '.join(sorted(known))} (rule placeholders-known)")
        elif data["kind"] == "worker" and "bootstrap" in known and "bootstrap" not in names:
            out.append(f"start.{key}: a worker command must contain {{bootstrap}} (rule placeholders-known)")
    return out


def rule_optional_parts(data: dict[str, Any]) -> list[str]:
    """Optional parts ``[...]`` of the command are balanced and not nested."""
    depth = 0
    for at, ch in enumerate(data["start"].get("command") or ""):
        if ch in "[]":
            depth += 1 if ch == "[" else -1
            if depth not in (0, 1):
                return [f"start.command: {'nested' if depth > 1 else 'unopened'} {ch!r} at character {at}; "
                        f"[...] marks one optional part (rule optional-parts)"]
    if depth:
        return ["start.command: a '[' is never closed; [...] marks one optional part (rule optional-parts)"]
    return []


def rule_virtual_clock_builtin_only(data: dict[str, Any]) -> list[str]:
    """Only an in-process implementation can run on the harness's virtual clock."""
    if data.get("timing", {}).get("clock") == "virtual" and "builtin" not in data["start"]:
        return ["timing.clock: \"virtual\" needs start.builtin (rule virtual-clock-builtin-only)"]
    return []


def rule_session_bounds_ordered(data: dict[str, Any]) -> list[str]:
    t = data.get("timing", {})
    if t.get("session_bounds") is False:
        given = [k for k in ("min_session_timeout_ms", "max_session_timeout_ms") if k in t]
        return [f"timing.{k}: the target declares session_bounds = false (no bounds) "
                f"(rule session-bounds-ordered)" for k in given]
    lo = t.get("min_session_timeout_ms", Timing.min_session_timeout_ms)
    hi = t.get("max_session_timeout_ms", Timing.max_session_timeout_ms)
    if lo > hi:
        return [f"timing.min_session_timeout_ms: {lo} exceeds max_session_timeout_ms {hi} "
                f"(rule session-bounds-ordered)"]
    return []


def rule_mutant_builtin_only(data: dict[str, Any]) -> list[str]:
    if "fakebroker" in data and "builtin" not in data["start"]:
        return ["fakebroker: options for the builtin fake broker need start.builtin "
                "(rule fakebroker-options-builtin-only)"]
    return []


def rule_group_log_declared(data: dict[str, Any]) -> list[str]:
    """The group-log capability and a [group_log] table come together; a builtin broker
    has no topic of its own to write to (real_kafka), an external one may (bootstrap)."""
    claims = "group-log" in data.get("capabilities", [])
    gl = data.get("group_log")
    if claims != (gl is not None):
        return ["group_log: the capability group-log and a [group_log] table go together "
                "(rule group-log-declared)"]
    if gl is None:
        return []
    builtin = "builtin" in data["start"]
    if gl.get("real_kafka") and not builtin:
        return ["group_log.real_kafka: only a builtin coordinator is started with a real Kafka "
                "(rule group-log-declared)"]
    if builtin and not gl.get("real_kafka"):
        return ["group_log.real_kafka: a builtin coordinator writes its log to a real Kafka the "
                "harness starts; set real_kafka = true (rule group-log-declared)"]
    return []


def rule_max_versions_known(data: dict[str, Any]) -> list[str]:
    """[max_versions] caps a coordinator's APIs, by the names the suite sends them by."""
    caps = data.get("max_versions")
    if not caps:
        return []
    if data["kind"] != "coordinator":
        return ["max_versions: only a coordinator target caps the versions the suite sends "
                "(rule max-versions-known)"]
    from fakebroker.protocol import default_registry
    reg = default_registry()
    return [f"max_versions.{api}: no API of that name (e.g. JoinGroup) (rule max-versions-known)"
            for api in caps if f"{api}Request" not in reg]


def validate_target_data(data: Any, schema: dict[str, Any]) -> list[str]:
    problems = rule_schema(data, schema)
    if problems:
        return problems
    out: list[str] = []
    for rule in (rule_start_one_way, rule_kind_start_match, rule_broker_address_known, rule_upstream_needs_command,
                 rule_overlap_stops_needs_command, rule_seed_command_needs_upstream,
                 rule_host_command_with_its_workers, rule_launch_version, rule_connect_build, rule_placeholders_known,
                 rule_optional_parts,
                 rule_virtual_clock_builtin_only, rule_session_bounds_ordered,
                 rule_mutant_builtin_only, rule_group_log_declared, rule_max_versions_known):
        out += rule(data)
    return out


# ---------------------------------------------------------------- loading

def target_schema() -> dict[str, Any]:
    return json.loads((default_schema_dir() / SCHEMA_FILE).read_text(encoding="utf-8"))


def _connect_build(impl: dict[str, Any], takes: bool, path: str) -> tuple[str, str | None, tuple[str, ...]]:
    """{connect}, the version the build certifies (None: not known here) and its jars'
    patterns, for a target whose commands take {connect} (else nothing)."""
    if not takes:
        return "", None, ()
    from fakebroker.realconnect.provision import CONNECT_VERSION, connect_home
    if "connect_libs" in impl:
        libs = Path(impl["connect_libs"]).expanduser()
        if not libs.is_absolute():
            libs = Path(path).resolve().parent / libs
        return str(libs), None, (str(libs / "*.jar"),)
    version = impl.get("connect_version", CONNECT_VERSION)
    return version, version, (str(connect_home(version) / "libs" / "*.jar"),)


def parse_target(data: dict[str, Any], path: str) -> Target:
    problems = validate_target_data(data, target_schema())
    if problems:
        raise TargetError(path, problems)
    start = data["start"]
    impl = data.get("implementation", {})
    connect, connect_version, connect_jars = _connect_build(impl, _takes_connect(data), path)
    timing = Timing(**data.get("timing", {}))
    return Target(
        path=path, name=data["name"], kind=data["kind"],
        protocols=frozenset(data["protocols"]), capabilities=frozenset(data.get("capabilities", [])),
        builtin=start.get("builtin"), bootstrap=start.get("bootstrap"), command=start.get("command"),
        timing=timing, ready_line=start.get("ready_line"), upstream=start.get("upstream"), launch=start.get("launch"),
        overlap_stops=start.get("overlap_stops", False), seed_command=start.get("seed_command"),
        host_command=start.get("host_command"),
        description=data.get("description", ""),
        implementation_name=impl.get("name", data["name"]),
        implementation_version=impl.get("version", connect_version or "unknown"),
        artefacts=tuple(impl.get("artefacts", connect_jars)),
        connect_protocol=data.get("connect_protocol", "sessioned"),
        mutant=data.get("fakebroker", {}).get("mutant"),
        api_keys={**DEFAULT_API_KEYS, **data.get("api_keys", {})},
        error_codes={**DEFAULT_ERROR_CODES, **data.get("error_codes", {})},
        group_log=GroupLog(**data["group_log"]) if "group_log" in data else None,
        connect=connect,
        max_versions=dict(data.get("max_versions", {})),
        chaos_scenarios=_chaos_scenarios(data, path))


def _chaos_scenarios(data: dict[str, Any], path: str) -> tuple[Path, ...]:
    """[chaos] scenarios, relative to the target file: the files of a worker's regression
    cases (their contents are read by ``conformance.chaos.regression.check_scenarios``, which
    the run calls before anything starts: the chaos layer sits above this one)."""
    names = data.get("chaos", {}).get("scenarios", [])
    if names and data["kind"] != "worker":
        raise TargetError(path, [f"chaos.scenarios: scenarios are cases of a worker, not a {data['kind']} "
                                 "(rule chaos-worker-only)"])
    out = []
    for n, name in enumerate(names):
        p = Path(name).expanduser()
        p = p if p.is_absolute() else Path(path).resolve().parent / p
        if not p.is_file():
            raise TargetError(path, [f"chaos.scenarios[{n}]: {p}: no such file (rule chaos-scenario)"])
        out.append(p)
    if len({p.name for p in out}) != len(out):
        raise TargetError(path, ["chaos.scenarios: two scenario files share a name, the case id (rule chaos-scenario)"])
    return tuple(out)


def load_target(path: str | Path) -> Target:
    """A target file, or ``mutant:NAME``: a declared mutant's target (``conformance.harness.mutant_declarations``)."""
    if str(path).startswith(MUTANT_PREFIX):
        try:
            return parse_target(mutant_target_data(str(path)), str(path))
        except DeclarationError as e:
            raise TargetError(str(path), [str(e)]) from None
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise TargetError(str(p), [f"(file): cannot read: {e.strerror or e} (rule readable)"]) from None
    except UnicodeDecodeError as e:
        raise TargetError(str(p), [f"(file): not UTF-8 at byte {e.start}: {e.reason} (rule encoding)"]) from None
    try:
        data = guarded(tomllib.loads, text)
    except tomllib.TOMLDecodeError as e:
        raise TargetError(str(p), [f"(file): not valid TOML: {e} (rule toml)"]) from None
    except InputLimit as e:
        raise TargetError(str(p), [f"(file): {e.message} (rule {e.rule})"]) from None
    return parse_target(data, str(p))
