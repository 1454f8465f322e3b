"""A bundled Connect-style worker for the worker suite, on kafka-python's group client.

kafka-python's ``BaseCoordinator`` does the classic group membership (FindCoordinator,
JoinGroup with the MEMBER_ID_REQUIRED retry, SyncGroup, background heartbeats,
LeaveGroup); this program adds what a Connect worker puts inside it, as KIP-415 describes:

- protocol type ``connect``, protocols by ``--connect-protocol`` (eager: default;
  compatible: compatible, default; sessioned: sessioned, compatible, default), each with
  worker metadata at its own version and, from v1, the current allocation;
- as leader: eager round-robin for v0; for v1/v2 incremental cooperative assignment by
  the project's KIP-415 assignor (``fakebroker.connect.assignor``)
  (revoke before assign, balance by revoking extras, lost work held back for
  ``--scheduled-rebalance-delay-ms`` before it is reassigned);
- as member: revoked work is released and the worker rejoins at once; an assignment with
  a ScheduledDelay makes it rejoin when the delay has passed; an assignment with an error
  (CONFIG_MISMATCH) is not run and the worker rejoins;
- under ``default`` (v0) it stops all its work before every rejoin (eager rebalancing);
- as leader of a group that falls back from v1/v2 to ``default``: KIP-415's one-time double
  rebalance (v0 assignments with nothing in them, a rejoin, then regular v0 assignments);
- its REST API on ``--rest-port`` says what it runs (``rest_status``: Connect's
  ``/connectors`` and ``/connectors/NAME/status``);
- SIGTERM: leave the group (LeaveGroup) and exit;
- refused by authorization (GROUP_AUTHORIZATION_FAILED, fatal in Kafka's clients): it
  reports the error (a ``fatal`` event and one line on stderr) and exits 1, as Connect's
  herder does, instead of retrying.

``--mutant NAME`` turns on one deliberate defect of ``MUTANTS`` (a worker mutant for
measuring the worker suite's power, declared in ``fixtures/mutants/workers.toml``); each is
checked where its defect lives, under its name.

It runs no connectors; its "work" is the set of units it owns. It prints one JSON line
per event on stdout (for the suite's logs).

    python -m conformance.workers.kafka_python_worker --bootstrap H:P --group G \\
        --worker-id w1 --rest-port 8083 --connect-protocol sessioned --connectors a:2,b:1
"""

from __future__ import annotations

import argparse
import logging
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import kafka.errors as Errors
from kafka.coordinator.base import BaseCoordinator
from kafka.net.compat import KafkaNetClient

from conformance.workers.kp_runtime import emit, serve, start_client, stop_on_signals
from conformance.workers.rest_status import serve_status

from fakebroker.connect.assignor import IncrementalCooperativeAssignor, round_robin
from fakebroker.connect.embedded import (ASSIGNMENT, METADATA, PROTOCOL_VERSIONS, Unit,
                                         connector_list, units_of)

MUTANTS = frozenset({
    "ignores-peer-allocations",
    "keeps-duplicate-claims",
    "leader-ignores-config-offsets",
    "runs-config-mismatch",
    "restarts-full-delay",
    "returning-worker-gets-lost-work",
    "never-reassigns-lost-work",
    "expired-work-to-leader-only",
    "no-revocation-on-join",
    "revokes-all-on-join",
    "no-rejoin-after-revocation",
    "allocation-keeps-revoked",
    "task-revocation-drops-connector",
    "ignores-scheduled-delay",
    "eager-assigns-new-only",
    "coordinator-error-drops-work",
    "sync-error-rejoins-as-new",
    "leaves-silently",
    "protocols-out-of-order",
    "metadata-one-version-low",
    "leader-url-not-its-own",
    "first-leader-sets-delay",
    "relists-owned-work",
    "default-protocol-compatible",
    "eager-keeps-work-while-rejoining",
    "stays-eager-after-downgrade",
    "keeps-work-after-downgrade",
    "downgrade-assigns-at-once",
    "default-delay-too-long",
    "revokes-and-assigns-same-round",
    "eager-tasks-to-one",
    "keeps-running-when-cut-off",
    "stopped-work-not-restarted",
    "retries-refused-group",
})

PROTOCOLS_BY_MODE = {"eager": ("default",), "compatible": ("compatible", "default"),
                     "sessioned": ("sessioned", "compatible", "default")}
# Connect's defaults, for settings the command leaves unset.
DEFAULT_CONNECT_PROTOCOL = "sessioned"     # connect.protocol (KIP-507; compatible in KIP-415)
DEFAULT_MAX_DELAY_MS = 300_000             # scheduled.rebalance.max.delay.ms (KIP-415)


def all_units(spec: str) -> list[Unit]:
    """``a:2,b:1`` -> each connector instance (task -1) and its tasks 0..n-1."""
    out: list[Unit] = []
    for part in filter(None, spec.split(",")):
        name, _, n = part.partition(":")
        out += [(name, -1)] + [(name, t) for t in range(int(n or 0))]
    return sorted(out)



class Worker(BaseCoordinator):  # type: ignore[misc]  # kafka-python is untyped
    DEFAULT_CONFIG = {**BaseCoordinator.DEFAULT_CONFIG, "metric_group_prefix": "connect"}

    def __init__(self, client: KafkaNetClient, args: argparse.Namespace, **configs: Any) -> None:
        super().__init__(client, **configs)
        self.client = client
        self.url = f"http://{args.worker_id}:{args.rest_port}/"
        self.protocols = PROTOCOLS_BY_MODE[args.connect_protocol]
        self.units = all_units(args.connectors)
        self.max_delay_ms = args.scheduled_rebalance_delay_ms
        # Leader state (KIP-415) and the delay a follower last received: the assignor's.
        self.assignor = IncrementalCooperativeAssignor(max_delay_ms=self.max_delay_ms)
        self.mutant: str | None = args.mutant
        self.config_offset = 1
        self.owned: set[Unit] = set()
        self.version: int | None = None  # the Connect protocol version of its last assignment
        self.lock = threading.Lock()
        self.rejoin_at: float | None = None
        self.last_leader = ("", "")
        self.last_share: dict[str, set[Unit]] = {}  # (mutant eager-assigns-new-only)
        self.session_s = args.session_timeout_ms / 1000
        self.unreachable_since: float | None = None  # since when no coordinator is known
        self.ghosts: set[Unit] = set()  # mutant stopped-work-not-restarted: stopped, taken for running
        self.second_round = False  # it sent the empty downgrade round: rejoin once it is installed
        # (generation, assignment) of a join + sync that completed while no one awaited it
        self.unclaimed: tuple[Any, bytes] | None = None

    # ---- what BaseCoordinator asks of a group type

    def protocol_type(self) -> str:
        return "connect"

    def group_protocols(self) -> list[tuple[str, bytes]]:
        with self.lock:
            owned = set(self.owned)
        out = []
        for p in self.protocols:
            v = PROTOCOL_VERSIONS[p]
            if v == 0:
                md = METADATA.new(url=self.url, config_offset=self.config_offset)
            else:
                allocation = None
                if owned:
                    allocation = ASSIGNMENT.encode_versioned(ASSIGNMENT.new(
                        error=0, leader=self.last_leader[0], leader_url=self.last_leader[1],
                        config_offset=self.config_offset, assignment=connector_list(owned),
                        revoked=None, scheduled_delay=0), v)
                md = METADATA.new(url=self.url, config_offset=self.config_offset, allocation=allocation)
            out.append((p, METADATA.encode_versioned(md, 1 if v == 2 and self.defect("metadata-one-version-low") else v)))
        if self.defect("protocols-out-of-order"):
            out.reverse()
        if self.defect("stays-eager-after-downgrade") and self.version == 0:
            out = [(p, md) for p, md in out if p == "default"]
        emit("join", protocols=[p for p, _ in out], owned=sorted(owned))
        return out

    def running(self) -> set[Unit]:
        """What it runs now: its REST status (``rest_status``)."""
        with self.lock:
            return self.owned - self.ghosts

    def defect(self, name: str) -> bool:
        """Whether the worker runs as mutant ``name`` (one deliberate defect)."""
        return self.mutant == name

    def _perform_assignment(self, leader_id: str, protocol: str, members: Sequence[Any]) -> dict[str, bytes]:
        version = PROTOCOL_VERSIONS[protocol]
        owned: dict[str, set[Unit]] = {}
        offsets = []
        for m in members:
            v, md = METADATA.decode_versioned(bytes(m.metadata))
            offsets.append(md.config_offset)
            alloc = getattr(md, "allocation", None)
            owned[m.member_id] = units_of(ASSIGNMENT.decode_versioned(alloc)[1].assignment) if alloc else set()
            if self.defect("ignores-peer-allocations") and m.member_id != leader_id:
                owned[m.member_id] = set()
        header = dict(error=0, leader=leader_id, config_offset=self.config_offset,
                      leader_url="http://elsewhere:8083/" if self.defect("leader-url-not-its-own") else self.url)
        if max(offsets) > self.config_offset and not self.defect("leader-ignores-config-offsets"):
            # Its config log is behind a member's (it has no log to catch up on): nothing
            # can be assigned safely; every member is told CONFIG_MISMATCH.
            emit("lead", protocol=protocol, error="CONFIG_MISMATCH", offsets=offsets)
            refused = ASSIGNMENT.new(**{**header, "error": 1}, assignment=[])
            return {m: ASSIGNMENT.encode_versioned(refused, version) for m in owned}
        if version == 0 and (self.version or 0) > 0 and not self.defect("downgrade-assigns-at-once"):
            # Its last round was incremental: members may still run work no v0 round listed.
            # Nothing is assigned until every member has released it and rejoined (KIP-415).
            self.second_round = True
            emit("lead", protocol=protocol, downgrade="empty round", members=sorted(owned))
            return {m: ASSIGNMENT.encode_versioned(ASSIGNMENT.new(**header, assignment=[]), 0) for m in owned}
        if version == 0:
            share = round_robin(self.units, sorted(owned))
            if self.defect("eager-tasks-to-one"):
                tasks = {u for u in self.units if u[1] >= 0}
                share = {m: (u - tasks) | (tasks if m == min(share) else set()) for m, u in share.items()}
            if self.defect("eager-assigns-new-only"):
                share = {m: u - self.last_share.get(m, set()) for m, u in share.items()}
                self.last_share = round_robin(self.units, sorted(owned))
            out = {m: ASSIGNMENT.encode_versioned(ASSIGNMENT.new(**header, assignment=connector_list(u)), 0)
                   for m, u in share.items()}
            emit("lead", protocol=protocol, assignments={m: sorted(u) for m, u in share.items()})
            return out
        new, revoked, delay = self._incremental(owned, leader_id)
        if self.defect("first-leader-sets-delay") and len(owned) == 1 and not any(owned.values()):
            delay = self.max_delay_ms
        if self.defect("relists-owned-work"):
            new = {m: new[m] | (owned[m] - revoked[m]) for m in owned}
        emit("lead", protocol=protocol, assigned={m: sorted(u) for m, u in new.items()},
             revoked={m: sorted(u) for m, u in revoked.items()}, delay=delay)
        return {m: ASSIGNMENT.encode_versioned(ASSIGNMENT.new(
            **header, assignment=connector_list(new[m]), revoked=connector_list(revoked[m]),
            scheduled_delay=delay), version) for m in owned}

    def _incremental(self, owned: dict[str, set[Unit]], leader_id: str,
                     ) -> tuple[dict[str, set[Unit]], dict[str, set[Unit]], int]:
        """One KIP-415 round by the project's assignor (``fakebroker.connect.assignor``):
        what each member gets new, what it must revoke, the scheduled delay. A mutant's
        defect is applied around it."""
        a = self.assignor
        now_ms = int(time.monotonic() * 1000)
        held, deadline = set(a.lost), a.delay_deadline_ms
        if self.defect("restarts-full-delay"):
            a.delay_deadline_ms = None  # every round with lost work starts the full delay
        if self.defect("no-revocation-on-join"):
            a.balance = False  # rule 6 (balance by revoking) never runs
        out = a.assign(now_ms, self.units, owned)
        members = sorted(owned)
        new = {m: set(out[m].added) for m in members}
        revoked = {m: set(out[m].revoked) for m in members}
        delay = max((r.delay_ms for r in out.values()), default=0)
        expired = {u for u in held if delay == 0} - set().union(*owned.values())
        if self.defect("keeps-duplicate-claims"):
            claims = Counter(u for m in members for u in owned[m])
            revoked = {m: {u for u in revoked[m] if claims[u] < 2} for m in members}
        if self.defect("never-reassigns-lost-work") and expired:
            new = {m: new[m] - expired for m in members}
            a.lost, a.delay_deadline_ms = set(expired), deadline  # still held, delay over
            a.previous = {m: us - expired for m, us in (a.previous or {}).items()}
        if self.defect("expired-work-to-leader-only") and expired:
            new = {m: new[m] - expired for m in members}
            new[leader_id] |= expired
        if self.defect("returning-worker-gets-lost-work") and delay > 0 and a.lost:
            idle = [m for m in members if not owned[m]]
            if idle:
                new[idle[0]] |= set(a.lost)
        if self.defect("revokes-all-on-join") and any(not owned[m] for m in members):
            revoked = {m: set(owned[m]) for m in members}
        if self.defect("revokes-and-assigns-same-round"):
            for m in members:
                for u in sorted(revoked[m]):
                    to = min((o for o in members if o != m), key=lambda o: (len(owned[o] | new[o]), o), default=None)
                    if to is not None:
                        new[to].add(u)
        return new, revoked, delay

    async def _do_join_and_sync_async(self) -> bytes:
        # The main loop waits for a round 200 ms at a time; a round that completes between
        # two waits is found done by the next, which starts a new JoinGroup and drops the
        # SyncGroup's assignment (kafka-python 3.0.12's join_group_async): the worker then
        # rejoins reporting work it was never told about, or without work it was given.
        # On a starved CPU that gap is wide (session 7: CLS-W-10, CONN-INC-13 failed beside
        # three Connect JVMs). The "new" round hands back that assignment instead, while its
        # generation is still the worker's (no error reset it meanwhile).
        held, self.unclaimed = self.unclaimed, None
        if held is not None and held[0] is self._generation:
            return held[1]
        assignment: bytes = await super()._do_join_and_sync_async()
        self.unclaimed = (self._generation, assignment)
        return assignment

    async def _on_join_complete_async(self, generation: int, member_id: str, protocol: str,
                                      member_assignment_bytes: bytes) -> None:
        self.unclaimed = None
        version, a = ASSIGNMENT.decode_versioned(bytes(member_assignment_bytes))
        if a.error != 0 and not self.defect("runs-config-mismatch"):
            # CONFIG_MISMATCH: run nothing of it, catch up (no config log here), rejoin
            emit("assignment-error", generation=generation, error=a.error)
            self.request_rejoin()
            return
        assigned = units_of(a.assignment)
        revoked = units_of(getattr(a, "revoked", None))
        if self.defect("task-revocation-drops-connector"):
            revoked |= {u for u in self.owned if u[0] in {c for c, _ in revoked}}
        delay = getattr(a, "scheduled_delay", 0) or 0
        with self.lock:
            downgraded = version == 0 and (self.version or 0) > 0
            self.version = version
            self.last_leader = (a.leader, a.leader_url)
            if downgraded and self.defect("keeps-work-after-downgrade"):
                self.owned = self.owned | assigned
            elif version == 0:
                self.owned = assigned
            elif self.defect("allocation-keeps-revoked"):
                self.owned = self.owned | assigned
            else:
                self.owned = (self.owned - revoked) | assigned
            # Its running set follows what it owns: a ghost it no longer owns is forgotten.
            self.ghosts &= self.owned
            owned = sorted(self.owned)
        emit("assigned", generation=generation, protocol=protocol, version=version,
             assigned=sorted(assigned), revoked=sorted(revoked), delay=delay, owned=owned)
        if self.second_round:
            self.second_round = False
            self.request_rejoin()  # the double rebalance's second round
        elif revoked and not self.defect("no-rejoin-after-revocation"):
            self.request_rejoin()  # released at once; the leader can hand them over
        elif delay > 0 and not self.defect("ignores-scheduled-delay"):
            self.rejoin_at = time.monotonic() + delay / 1000
            if a.leader != member_id:  # a delay in progress, should this worker come to lead
                self.assignor.on_assignment(int(time.monotonic() * 1000), delay)
        elif delay > 0:
            self.request_rejoin()

    async def _on_join_prepare_async(self, generation: int, member_id: str, timeout_ms: int | None = None) -> None:
        # Eager (v0): every rebalance starts from nothing, so all work stops before the rejoin.
        if self.version == 0 and not self.defect("eager-keeps-work-while-rejoining"):
            with self.lock:
                released, self.owned = sorted(self.owned), set()
            emit("released", generation=generation, units=released)

    def release_when_cut_off(self) -> None:
        """Cut off from its coordinator past its session timeout, the group has expired it and
        another worker may be given its work: it stops all of it (no zombie, KIP-415's
        happens-before) and so reports nothing when it rejoins."""
        if not self.coordinator_unknown():
            self.unreachable_since = None
            return
        now = time.monotonic()
        self.unreachable_since = self.unreachable_since or now
        if now - self.unreachable_since > self.session_s and not self.defect("keeps-running-when-cut-off"):
            with self.lock:
                released, self.owned = sorted(self.owned), set()
                if self.defect("stopped-work-not-restarted"):
                    self.ghosts |= set(released)
            if released:
                emit("released", reason="coordinator unreachable past the session timeout", units=released)

    def coordinator_dead(self, error: Any) -> None:
        super().coordinator_dead(error)
        if self.defect("coordinator-error-drops-work") and isinstance(error, Exception):
            with self.lock:
                self.owned = set()
            self.request_rejoin()

    def _process_sync_group_response(self, response: Any, send_time: float) -> Any:
        if self.defect("sync-error-rejoins-as-new") and response.error_code in (14, 15, 16):
            self.reset_generation()
        return super()._process_sync_group_response(response, send_time)

    async def maybe_leave_group_async(self, reason: str | None = None, timeout_ms: int | None = None) -> None:
        if self.defect("leaves-silently"):
            self.reset_generation()
            return
        await super().maybe_leave_group_async(reason, timeout_ms)

    # ---- main loop

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                self.ensure_active_group(timeout_ms=200)
            except Errors.AuthorizationError:
                if not self.defect("retries-refused-group"):
                    raise
                continue
            except Errors.KafkaError as e:  # a lost connection, no coordinator: try again, as Connect does
                if not e.retriable:
                    raise
                self.release_when_cut_off()
                stop.wait(0.2)
                continue
            self.poll_heartbeat()
            self.release_when_cut_off()
            if self.rejoin_at is not None and time.monotonic() >= self.rejoin_at:
                self.rejoin_at = None
                emit("scheduled-rejoin")
                self.request_rejoin()
            if not self.need_rejoin():
                stop.wait(0.05)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="A Connect-style worker on kafka-python (group protocol only).")
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--group", required=True)
    p.add_argument("--worker-id", required=True)
    p.add_argument("--rest-port", type=int, default=8083)
    p.add_argument("--connect-protocol", choices=sorted(PROTOCOLS_BY_MODE), default=None,
                   help=f"connect.protocol (default {DEFAULT_CONNECT_PROTOCOL})")
    p.add_argument("--connectors", default="conn-a:2,conn-b:1")
    p.add_argument("--session-timeout-ms", type=int, default=10000)
    p.add_argument("--rebalance-timeout-ms", type=int, default=60000)
    p.add_argument("--heartbeat-interval-ms", type=int, default=3000)
    p.add_argument("--scheduled-rebalance-delay-ms", type=int, default=None,
                   help=f"scheduled.rebalance.max.delay.ms (default {DEFAULT_MAX_DELAY_MS})")
    p.add_argument("--mutant", choices=sorted(MUTANTS), help="run with this one deliberate defect")
    args = p.parse_args(argv)
    if args.connect_protocol is None:
        args.connect_protocol = "compatible" if args.mutant == "default-protocol-compatible" else DEFAULT_CONNECT_PROTOCOL
    if args.scheduled_rebalance_delay_ms is None:
        args.scheduled_rebalance_delay_ms = 2 * DEFAULT_MAX_DELAY_MS if args.mutant == "default-delay-too-long" \
            else DEFAULT_MAX_DELAY_MS
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

    stop = stop_on_signals()
    client = start_client(args.bootstrap, args.worker_id)
    worker = Worker(client, args, group_id=args.group, api_version=client._manager.broker_version,
                    session_timeout_ms=args.session_timeout_ms,
                    heartbeat_interval_ms=args.heartbeat_interval_ms,
                    max_poll_interval_ms=args.rebalance_timeout_ms, retry_backoff_ms=100)
    try:
        rest = serve_status(args.rest_port, worker.units, worker.running)
    except OSError as e:
        print(f"kafka_python_worker: cannot serve REST on 127.0.0.1:{args.rest_port}: {e}", file=sys.stderr)
        return 2
    emit("started", worker=args.worker_id, protocols=list(worker.protocols), rest_port=args.rest_port)
    try:
        return serve(worker, client, stop)
    except Errors.AuthorizationError as e:
        emit("fatal", error=str(e))
        print(f"kafka_python_worker: refused by the broker's authorization: {e}", file=sys.stderr)
        return 1
    finally:
        rest.shutdown()


if __name__ == "__main__":
    sys.exit(main())
