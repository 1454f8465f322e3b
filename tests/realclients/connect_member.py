"""A Kafka Connect-style group member built on kafka-python's ``BaseCoordinator``.

kafka-python supplies the real classic-group client machinery (FindCoordinator, JoinGroup
with MEMBER_ID_REQUIRED retry, SyncGroup, background heartbeats, LeaveGroup); this
subclass supplies what Connect puts inside it: protocol type ``connect``, the protocols
``sessioned`` / ``compatible`` / ``default`` with worker metadata, and a leader that
assigns connectors and tasks. The embedded bytes are encoded and decoded with OUR codec
(``ConnectProtocolMetadata`` / ``ConnectProtocolAssignment``), so a test can check that
the broker carries them byte-exact between real clients.

The leader's assignor is deliberately simple but follows Connect's rules per version:
- v0 (``default``, eager): every member gets its whole target share; nothing is revoked.
- v1/v2 (``compatible`` / ``sessioned``, incremental cooperative): ``Assignment`` lists
  only newly assigned work, work a member owns beyond its share is ``Revoked``, and work
  still owned by someone else is not handed out until it has been revoked. A member that
  is told to revoke rejoins at once, as a Connect worker does.
The target share is a round-robin of the sorted units over the sorted member ids.

Everything a member sends and receives is recorded per generation (``JoinRecord``,
``LeaderRecord``) for the test to compare.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from kafka.coordinator.base import BaseCoordinator
from kafka.net.compat import KafkaNetClient
from kafka.protocol.admin import DescribeGroupsRequest

from fakebroker.connect.assignor import round_robin
from fakebroker.connect.embedded import ASSIGNMENT, METADATA, PROTOCOL_VERSIONS, Unit, connector_list
from fakebroker.connect.embedded import units_of as from_connector_list
from fakebroker.protocol import Struct

log = logging.getLogger(__name__)

PROTOCOL_TYPE = "connect"
# Connect's protocol names in preference order (PROTOCOL_VERSIONS: the embedded version of each).
ALL_PROTOCOLS: tuple[str, ...] = tuple(PROTOCOL_VERSIONS)
CONNECTOR_TASK = -1  # the task id that stands for the connector instance itself

T = TypeVar("T")


# ---------------------------------------------------------------- pure encode / decode

def units_of(connectors: Mapping[str, int]) -> list[Unit]:
    """Every unit of work: each connector instance plus its tasks ``0..n-1``, sorted."""
    return sorted((name, t) for name, n in connectors.items() for t in [CONNECTOR_TASK, *range(n)])


def encode_metadata(protocol: str, url: str, config_offset: int, allocation: bytes | None) -> bytes:
    """Worker metadata for one protocol: v0 has no allocation field at all."""
    version = PROTOCOL_VERSIONS[protocol]
    if version == 0:
        return METADATA.encode_versioned(METADATA.new(url=url, config_offset=config_offset), 0)
    return METADATA.encode_versioned(
        METADATA.new(url=url, config_offset=config_offset, allocation=allocation), version)


def decode_metadata(protocol: str, data: bytes) -> Struct:
    """Decode a member's metadata, insisting that its version is the protocol's version
    (a ``sessioned`` vote carrying v1 bytes would be a broken worker or broker)."""
    version, md = METADATA.decode_versioned(data)
    if version != PROTOCOL_VERSIONS[protocol]:
        raise ValueError(f"metadata for protocol {protocol!r} has version {version}, "
                         f"expected {PROTOCOL_VERSIONS[protocol]}")
    return md


def allocation_units(md: Struct) -> set[Unit]:
    """What a member reports it owns (v1/v2 metadata's nested assignment)."""
    allocation = getattr(md, "allocation", None)
    if allocation is None:
        return set()
    _, alloc = ASSIGNMENT.decode_versioned(allocation)
    return from_connector_list(alloc.assignment)


def compute_assignments(protocol: str, leader_id: str, leader_url: str, config_offset: int,
                        units: Sequence[Unit], owned: Mapping[str, set[Unit]]) -> dict[str, Struct]:
    """The leader's decision per member, as ``ConnectProtocolAssignment`` objects."""
    version = PROTOCOL_VERSIONS[protocol]
    target = round_robin(units, owned)
    out: dict[str, Struct] = {}
    for member, share in target.items():
        header: dict[str, Any] = dict(error=0, leader=leader_id, leader_url=leader_url,
                                      config_offset=config_offset)
        if version == 0:
            out[member] = ASSIGNMENT.new(**header, assignment=connector_list(share))
            continue
        held_elsewhere = set().union(*(o for m, o in owned.items() if m != member))
        new = share - owned[member] - held_elsewhere
        revoked = owned[member] - share
        out[member] = ASSIGNMENT.new(**header, assignment=connector_list(new),
                                     revoked=connector_list(revoked), scheduled_delay=0)
    return out


# ---------------------------------------------------------------- what gets recorded

@dataclass(frozen=True)
class LeaderRecord:
    generation: int
    protocol: str
    member_metadata: dict[str, bytes]  # member id -> metadata bytes as the leader received them
    intended: dict[str, Struct]  # member id -> the assignment the leader meant to send
    produced: dict[str, bytes]  # member id -> the bytes it put into SyncGroup


@dataclass(frozen=True)
class JoinRecord:
    generation: int
    member_id: str
    protocol: str
    sent_metadata: dict[str, bytes]  # protocol -> bytes of the JoinGroup that led here
    assignment: bytes  # what SyncGroup returned to this member
    version: int  # the assignment's version prefix
    decoded: Struct
    owned_after: frozenset[Unit]
    leader: LeaderRecord | None  # set when this member led this generation


# ---------------------------------------------------------------- the member

class ConnectMember(BaseCoordinator):  # type: ignore[misc]  # kafka-python is untyped
    """One Connect worker's group membership. ``start()`` runs its main loop in a thread
    (join, rejoin when asked, keep the poll timer alive); ``stop()`` leaves the group."""

    DEFAULT_CONFIG = {**BaseCoordinator.DEFAULT_CONFIG, "metric_group_prefix": "connect"}

    def __init__(self, client: KafkaNetClient, *, name: str, url: str, config_offset: int,
                 connectors: Mapping[str, int], protocols: Sequence[str] = ALL_PROTOCOLS,
                 owned: Iterable[Unit] = (), **configs: Any) -> None:
        unknown = [p for p in protocols if p not in PROTOCOL_VERSIONS]
        if unknown or not protocols:
            raise ValueError(f"protocols must be a non-empty subset of {ALL_PROTOCOLS}, "
                             f"got {protocols}")
        super().__init__(client, **configs)
        self.client = client
        self.name = name
        self.url = url
        self.config_offset = config_offset
        self.units = units_of(connectors)
        self.protocols = tuple(protocols)
        self._state_lock = threading.Lock()
        self._owned: set[Unit] = set(owned)
        # The header of the last assignment received, reused when reporting the allocation.
        self._last_header: tuple[str, str, int] = ("", "", config_offset)
        self._sent: dict[str, bytes] = {}
        self._leading: LeaderRecord | None = None
        self.records: list[JoinRecord] = []
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._main_loop, name=f"connect-{name}", daemon=True)

    # ---- what BaseCoordinator asks of a group type

    def protocol_type(self) -> str:
        return PROTOCOL_TYPE

    def group_protocols(self) -> list[tuple[str, bytes]]:
        """Called by the base class right before each JoinGroup: records what is sent."""
        with self._state_lock:
            sent = {p: encode_metadata(p, self.url, self.config_offset, self._allocation(p))
                    for p in self.protocols}
            self._sent = sent
        return list(sent.items())

    def _allocation(self, protocol: str) -> bytes | None:
        version = PROTOCOL_VERSIONS[protocol]
        if version == 0 or not self._owned:
            return None
        leader, leader_url, offset = self._last_header
        return ASSIGNMENT.encode_versioned(
            ASSIGNMENT.new(error=0, leader=leader, leader_url=leader_url, config_offset=offset,
                           assignment=connector_list(self._owned), revoked=None,
                           scheduled_delay=0), version)

    def _perform_assignment(self, leader_id: str, protocol: str,
                            members: Sequence[Any]) -> dict[str, bytes]:
        received = {m.member_id: bytes(m.metadata) for m in members}
        decoded = {mid: decode_metadata(protocol, md) for mid, md in received.items()}
        owned = {mid: allocation_units(md) for mid, md in decoded.items()}
        intended = compute_assignments(protocol, leader_id, self.url, self.config_offset,
                                       self.units, owned)
        version = PROTOCOL_VERSIONS[protocol]
        produced = {mid: ASSIGNMENT.encode_versioned(a, version) for mid, a in intended.items()}
        with self._state_lock:
            self._leading = LeaderRecord(self._generation.generation_id, protocol, received,
                                         intended, produced)
        log.info("%s led generation %s (%s): %s", self.name, self._generation.generation_id,
                 protocol, intended)
        return produced

    async def _on_join_complete_async(self, generation: int, member_id: str, protocol: str,
                                      member_assignment_bytes: bytes) -> None:
        data = bytes(member_assignment_bytes)
        version, assignment = ASSIGNMENT.decode_versioned(data)
        with self._state_lock:
            # The leader's record is kept only if it is for this very generation.
            leading, self._leading = self._leading, None
            if leading is not None and leading.generation != generation:
                leading = None
            revoked = from_connector_list(getattr(assignment, "revoked", None))
            if version == 0:
                self._owned = from_connector_list(assignment.assignment)
            else:
                self._owned = (self._owned - revoked) | from_connector_list(assignment.assignment)
            self._last_header = (assignment.leader, assignment.leader_url, assignment.config_offset)
            self.records.append(JoinRecord(generation, member_id, protocol, dict(self._sent), data,
                                           version, assignment, frozenset(self._owned), leading))
        log.info("%s joined generation %s (%s) v%s: %s", self.name, generation, protocol,
                 version, assignment)
        if version != PROTOCOL_VERSIONS.get(protocol):
            raise ValueError(f"assignment v{version} under protocol {protocol!r}")
        if revoked:
            # Incremental cooperative: revoked work is released, then the worker rejoins so
            # the leader can hand it to its new owner.
            self.request_rejoin()

    # ---- the worker's main loop

    def start(self) -> ConnectMember:
        self._thread.start()
        return self

    def _main_loop(self) -> None:
        try:
            while not self._stop.is_set():
                # Short slices so stop() is prompt; an unfinished join stays in flight.
                self.ensure_active_group(timeout_ms=200)
                self.poll_heartbeat()
                if not self.need_rejoin():
                    self._stop.wait(0.05)
        except BaseException as e:  # noqa: BLE001 - surfaced to the test through .error
            log.exception("%s main loop failed", self.name)
            self.error = e

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the loop, leave the group, close the client; every step bounded."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout_s)
        try:
            self.close(timeout_ms=int(timeout_s * 1000))
        finally:
            # Stop the IO thread with a bound first: the client's close() joins it unbounded.
            self.client._net.stop(timeout_ms=int(timeout_s * 1000))
            self.client.close()

    def describe_group(self, timeout_ms: int = 10000) -> Any:
        """DescribeGroups for this member's group, sent over its own connection to the
        coordinator: the broker's view (state, protocol, stored metadata and assignments)
        as any Kafka client sees it."""
        async def call() -> Any:
            fut = self._manager.send(DescribeGroupsRequest(groups=[self.group_id]),
                                     node_id=self.coordinator_id)
            return await self._manager.wait_for(fut, timeout_ms)
        response = self._net.run(call)
        (group,) = response.groups
        return group

    def snapshot(self) -> list[JoinRecord]:
        with self._state_lock:
            return list(self.records)

    @property
    def owned(self) -> frozenset[Unit]:
        with self._state_lock:
            return frozenset(self._owned)


def make_member(bootstrap: str, *, name: str, group: str, url: str, config_offset: int,
                connectors: Mapping[str, int], protocols: Sequence[str] = ALL_PROTOCOLS,
                owned: Iterable[Unit] = (), session_timeout_ms: int = 6000,
                heartbeat_interval_ms: int = 300, rebalance_timeout_ms: int = 10000,
                bootstrap_timeout_ms: int = 10000) -> ConnectMember:
    """A member with its own client, built the way ``KafkaConsumer`` builds its coordinator:
    a ``KafkaNetClient`` whose IO thread is started, bootstrapped to learn the broker's
    API versions."""
    client = KafkaNetClient(bootstrap_servers=bootstrap, client_id=name)
    try:
        client._net.start()
        client._manager.bootstrap(bootstrap_timeout_ms)
        api_version = client._manager.broker_version
        if api_version is None:
            raise RuntimeError(f"{name}: no ApiVersions from {bootstrap} "
                               f"within {bootstrap_timeout_ms} ms")
        return ConnectMember(client, name=name, url=url, config_offset=config_offset,
                             connectors=connectors, protocols=protocols, owned=owned,
                             group_id=group, api_version=api_version,
                             session_timeout_ms=session_timeout_ms,
                             heartbeat_interval_ms=heartbeat_interval_ms,
                             max_poll_interval_ms=rebalance_timeout_ms,
                             retry_backoff_ms=100)
    except BaseException:
        client.close()
        raise


def wait_for(predicate: Callable[[], T | None], what: str, members: Sequence[ConnectMember],
             timeout_s: float) -> T:
    """Poll ``predicate()`` until it returns something truthy; fail with the members'
    history on a timeout or as soon as a member's loop has died."""
    deadline = time.monotonic() + timeout_s
    while True:
        for m in members:
            if m.error is not None:
                raise AssertionError(f"member {m.name} failed: {m.error!r}") from m.error
        result = predicate()
        if result:
            return result
        if time.monotonic() >= deadline:
            history = {m.name: [(r.generation, r.protocol, r.version, sorted(r.owned_after))
                                for r in m.snapshot()] for m in members}
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}; "
                                 f"joins so far: {history}")
        time.sleep(0.05)  # polling real clients; the predicate is the assertion
