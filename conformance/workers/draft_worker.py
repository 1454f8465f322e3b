"""A reference worker for the KIP-848 connect draft (ConnectGroupHeartbeat /
PrepareAssignment / InstallAssignment), on the project's wire client (``fakebroker.client``).

It runs no connectors; its "work" is the set of connectors and tasks it owns. What it does
(the draft's worker-side rules, C848-W-*):

- chooses its member id once (``<worker-id>-<uuid>``) and keeps it for its life;
- joins at epoch 0 with every top-level field set; afterwards sends only what changed
  (owned work, assignors), and every field again after an error;
- heartbeats at the interval of the last response, adopts each response's member epoch;
- releases revoked work first and heartbeats at once to acknowledge it, then starts new work;
- on UNKNOWN_MEMBER_ID / FENCED_MEMBER_EPOCH drops all its work and rejoins at epoch 0
  under the same member id;
- answered COMPUTE_ASSIGNMENT: PrepareAssignment, a sticky round-robin over its connectors
  (``--connectors a:2,b:1``), InstallAssignment; a FENCED_MEMBER_EPOCH on either retries
  after the next heartbeat, any other error abandons the attempt;
- holds back the work of a member that left for ``--scheduled-rebalance-delay-ms``, and when
  the delay ends bumps its assignor's Reason to ask for a new assignment;
- gives a member that returns while its work is held back that work at once (the draft's
  "worker bounces" case study);
- offers two assignors, most preferred first: ``connect`` (versions 0-2, encoding at 2) and
  ``eager`` (0 only), each with its Connect worker metadata at its version;
- installs, per member, the lowest version every prepared member encodes with (within the
  chosen assignor's range) and that member's Connect assignment at that version;
- leaves with epoch -1 on SIGTERM.

``--mutant NAME`` turns on one deliberate defect of ``MUTANTS`` (a worker mutant measuring
the worker suite's power, declared in ``fixtures/mutants/workers.toml``).

    python -m conformance.workers.draft_worker --bootstrap 127.0.0.1:9092 --group g \
        --worker-id w1 --connectors a:2,b:1
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
import uuid
from typing import Any

from fakebroker.client import ClientError, KafkaConnection

from .owned_work import NOTHING, Work, connectors_of, new_work, show, tasks_of, units, work_of
from fakebroker.connect.embedded import assignment_bytes, metadata_bytes
from .rest_status import serve_status

UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH = 25, 110
RESTART = (UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH)
CONFIG_OFFSET = 1
#: (name, minimum, maximum, version), most preferred first (newest protocol first, as
#: Connect lists sessioned, compatible, default).
ASSIGNORS = (("connect", 0, 2, 2), ("eager", 0, 0, 0))

MUTANTS = frozenset({
    "draft-install-loses-unit",
    "draft-install-duplicates-unit",
    "draft-install-version-out-of-range",
    "draft-install-metadata-empty",
    "draft-assignor-version-out-of-range",
    "draft-assignor-metadata-wrong-version",
    "draft-assignors-reversed",
    "draft-heartbeat-interval-ignored",
    "draft-heartbeat-interval-first-only",
    "draft-heartbeat-flood",
    "draft-revocation-acknowledged-late",
    "draft-leaves-silently",
    "draft-bounce-not-restored",
})


def log(event: str, **kw: Any) -> None:
    print(json.dumps({"t": round(time.time(), 3), "event": event, **kw}, default=str), flush=True)


def parse_connectors(spec: str) -> Work:
    connectors, tasks = [], []
    for item in filter(None, spec.split(",")):
        name, _, n = item.partition(":")
        connectors.append(name)
        tasks += [(name, i) for i in range(int(n or 0))]
    return new_work(connectors, tasks)


class DraftWorker:
    def __init__(self, a: argparse.Namespace) -> None:
        self.a = a
        self.member_id = f"{a.worker_id}-{uuid.uuid4()}"
        self.epoch = 0
        self.owned = NOTHING
        self.reason = 0
        self.interval_ms = 3000
        self.interval_set = False              # an answer gave the interval
        self.universe = parse_connectors(a.connectors)
        self.compute_code = a.compute_assignment_code
        self.sent_owned: Work | None = None   # what the last heartbeat reported
        self.sent_reason: int | None = None
        self.full_next = True
        self.pending_compute = False           # COMPUTE_ASSIGNMENT to (re)try after a heartbeat
        self.held: dict[tuple[str, Any], tuple[float, str]] = {}  # unit -> (end of its delay, owner)
        self.plan: dict[str, Work] = {}        # the last assignment this worker installed
        self.stopping = asyncio.Event()
        self.conn: KafkaConnection | None = None
        self.mutant: str = a.mutant or ""

    # ------------------------------------------------------------------ wire

    async def send(self, name: str, **fields: Any) -> Any:
        assert self.conn is not None
        body = self.conn.registry[name + "Request"].new(**fields)
        return (await self.conn.send(body, 0)).response

    def cat(self, name: str, work: Work) -> Any:
        mt = self.conn.registry[name + "Request"]  # type: ignore[union-attr]
        return mt.classes["ConnectorsAndTasks"](
            connectors=connectors_of(work),
            tasks=[mt.classes["ConnectorTaskId"](connector_id=c, task_id=t) for c, t in tasks_of(work)])

    async def heartbeat(self, epoch: int | None = None) -> Any:
        epoch = self.epoch if epoch is None else epoch
        fields: dict[str, Any] = dict(group_id=self.a.group, member_id=self.member_id, member_epoch=epoch)
        full = self.full_next or epoch == 0
        if full or self.sent_owned != self.owned:
            fields["connectors_and_tasks"] = self.cat("ConnectGroupHeartbeat", self.owned)
        if full or self.sent_reason != self.reason:
            fields["client_assignors"] = self.client_assignors()
        if full:
            fields["rebalance_timeout_ms"] = self.a.rebalance_timeout_ms
        r = await self.send("ConnectGroupHeartbeat", **fields)
        self.sent_owned, self.sent_reason = self.owned, self.reason
        self.full_next = r.error_code not in (0, self.compute_code)
        return r

    def client_assignors(self) -> list[Any]:
        acls = self.conn.registry["ConnectGroupHeartbeatRequest"].classes["Assignor"]  # type: ignore[union-attr]
        url = f"http://{self.a.worker_id}:{self.a.rest_port}/"
        out = []
        for i, (name, lo, hi, version) in enumerate(ASSIGNORS):
            encoded_at = version
            if i == 0 and self.mutant == "draft-assignor-version-out-of-range":
                version = hi + 1
            if i == 0 and self.mutant == "draft-assignor-metadata-wrong-version":
                encoded_at = 0
            out.append(acls(name=name, minimum_version=lo, maximum_version=hi, reason=self.reason,
                            version=version, metadata=metadata_bytes(encoded_at, url, CONFIG_OFFSET)))
        return out[::-1] if self.mutant == "draft-assignors-reversed" else out

    # ------------------------------------------------------------------ behaviour

    async def apply(self, r: Any) -> bool:
        """Take a heartbeat answer; True when the next heartbeat is due at once."""
        if r.error_code in RESTART:
            log("restart", error=r.error_code, released=show(self.owned))
            self.owned, self.epoch, self.pending_compute = NOTHING, 0, False
            return True
        if r.error_code not in (0, self.compute_code):
            log("heartbeat-error", error=r.error_code)
            return False
        self.epoch = r.member_epoch
        if r.heartbeat_interval_ms > 0 and not (self.mutant == "draft-heartbeat-interval-first-only"
                                                and self.interval_set):
            self.interval_ms, self.interval_set = r.heartbeat_interval_ms, True
            if self.mutant == "draft-heartbeat-interval-ignored":
                self.interval_ms = 3000
            elif self.mutant == "draft-heartbeat-flood":
                self.interval_ms = r.heartbeat_interval_ms // 10
        now = False
        if r.assignment is not None:
            new = work_of(r.assignment.connectors_and_tasks)
            revoked = self.owned - new
            if revoked:   # release first, acknowledge at once, start nothing in between
                self.owned = self.owned - revoked
                log("revoked", units=show(revoked))
                now = self.mutant != "draft-revocation-acknowledged-late"
            else:
                if new != self.owned:
                    log("assigned", units=show(new - self.owned))
                self.owned = new
        if r.error_code == self.compute_code:
            self.pending_compute = True
        if self.pending_compute:
            now = await self.compute() or now
        if self.held and min(t for t, _ in self.held.values()) <= time.monotonic():
            self.held.clear()
            self.reason = (self.reason + 1) % 128
            log("delay-over", reason=self.reason)
            now = True
        return now

    async def compute(self) -> bool:
        p = await self.send("ConnectGroupPrepareAssignment", group_id=self.a.group,
                            member_id=self.member_id, member_epoch=self.epoch)
        if p.error_code == FENCED_MEMBER_EPOCH:
            log("prepare-fenced")
            return False          # retried after the next heartbeat
        self.pending_compute = False
        if p.error_code:
            log("prepare-abandoned", error=p.error_code)
            return False
        members = sorted(m.member_id for m in p.members)
        current = {m.member_id: work_of(m.connectors_and_tasks) for m in p.members}
        plan = self.defective(self.assign(members, current))
        version = self.install_version(p)
        encoded_at = min(version, 2)  # the version mutant mislabels bytes it can still encode
        mt = self.conn.registry["ConnectGroupInstallAssignmentRequest"]  # type: ignore[union-attr]
        body = [mt.classes["Member"](member_id=m, connectors_and_tasks=self.cat("ConnectGroupInstallAssignment", w),
                                     version=version, metadata=self.assignment_metadata(encoded_at, w, current.get(m)))
                for m, w in plan.items()]
        i = await self.send("ConnectGroupInstallAssignment", group_id=self.a.group, member_id=self.member_id,
                            member_epoch=self.epoch, group_epoch=p.group_epoch, error=0, members=body)
        if i.error_code == FENCED_MEMBER_EPOCH:
            log("install-fenced")
            self.pending_compute = True
            return False
        if i.error_code:
            log("install-abandoned", error=i.error_code)
            return False
        self.plan = plan
        log("installed", group_epoch=p.group_epoch, plan={m: show(w) for m, w in plan.items()})
        return True

    def install_version(self, p: Any) -> int:
        """The lowest version any prepared member encodes its metadata with, within the
        chosen assignor's range: every member can read it (Connect's leader does the same)."""
        _, lo, hi, _ = next((a for a in ASSIGNORS if a[0] == p.assignor_name), ASSIGNORS[0])
        version = max(lo, min([hi] + [m.assignor.version for m in p.members if m.assignor is not None]))
        return hi + 1 if self.mutant == "draft-install-version-out-of-range" else version

    def assignment_metadata(self, version: int, target: Work, current: Work | None) -> bytes:
        """A member's Connect assignment at ``version`` (ERRATA 24): v0 lists everything it
        should own, v1/v2 what is new to it and what it gives back."""
        if self.mutant == "draft-install-metadata-empty":
            return b""
        had = set(units(current or NOTHING))

        def pairs(us: Any) -> list[tuple[str, int]]:
            return sorted((u, -1) if k == "c" else u for k, u in us)
        mine = units(target)
        if version == 0:
            return assignment_bytes(0, leader=self.member_id, config_offset=CONFIG_OFFSET, assigned=pairs(mine))
        return assignment_bytes(version, leader=self.member_id, config_offset=CONFIG_OFFSET,
                                assigned=pairs(u for u in mine if u not in had),
                                revoked=pairs(u for u in had if u not in set(mine)))

    def defective(self, plan: dict[str, Work]) -> dict[str, Work]:
        """The install mutants' defects (identity for the reference worker)."""
        ids = sorted(plan)
        if len(ids) < 2:
            return plan
        if self.mutant == "draft-install-loses-unit":
            last = units(plan[ids[-1]])
            if last:
                plan[ids[-1]] = frozenset(last[:-1])
        elif self.mutant == "draft-install-duplicates-unit":
            first = units(plan[ids[0]])
            if first:
                plan[ids[1]] = plan[ids[1]] | frozenset(first[:1])
        return plan

    def assign(self, members: list[str], current: dict[str, Work]) -> dict[str, Work]:
        """Sticky round robin: members keep their current work up to the quota; the work of
        members that left is held back for the scheduled delay, and given back to its owner
        if it returns meanwhile; the rest goes to the least loaded member."""
        now = time.monotonic()
        gone = {(u, m) for m, w in self.plan.items() if m not in members for u in units(w)}
        if self.a.scheduled_rebalance_delay_ms > 0:
            for u, m in gone:
                self.held.setdefault(u, (now + self.a.scheduled_rebalance_delay_ms / 1000, m))
        back = {u: m for u, (t, m) in self.held.items() if m in members}
        if self.mutant == "draft-bounce-not-restored":
            back = {}
        self.held = {u: (t, m) for u, (t, m) in self.held.items() if t > now and u not in back}
        kept = {m: [] for m in members}  # type: dict[str, list[tuple[str, Any]]]
        pool = [u for u in units(self.universe) if u not in self.held]
        quota = -(-len(pool) // max(len(members), 1))
        taken: set[tuple[str, Any]] = set(back)
        for u, m in sorted(back.items()):
            kept[m].append(u)
        for m in members:
            for u in units(current.get(m, NOTHING)):
                if u in pool and u not in taken and len(kept[m]) < quota:
                    kept[m].append(u)
                    taken.add(u)
        for u in pool:
            if u not in taken:
                m = min(members, key=lambda x: (len(kept[x]), x))
                kept[m].append(u)
        return {m: frozenset(us) for m, us in kept.items()}

    async def run(self) -> None:
        self.conn = await KafkaConnection.open(self.a.bootstrap, client_id=self.a.worker_id)
        log("started", member_id=self.member_id)
        while not self.stopping.is_set():
            try:
                r = await self.heartbeat()
            except ClientError as e:
                log("error", error=str(e))
                await asyncio.sleep(0.5)
                continue
            now = await self.apply(r)
            if not now:
                try:
                    await asyncio.wait_for(self.stopping.wait(), self.interval_ms / 1000)
                except asyncio.TimeoutError:
                    pass
        if self.epoch > 0 and self.mutant != "draft-leaves-silently":
            self.full_next = False
            r = await self.heartbeat(epoch=-1)
            log("left", error=r.error_code)
        await self.conn.close()


def _as_status(owned: Work) -> list[tuple[str, int]]:
    """Units as Connect's REST status lists them: a connector as (name, -1), a task as (name, n)."""
    return [(c, -1) for c in connectors_of(owned)] + tasks_of(owned)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--worker-id", required=True)
    ap.add_argument("--rest-port", type=int, default=8083)
    ap.add_argument("--rebalance-timeout-ms", type=int, default=60_000)
    ap.add_argument("--scheduled-rebalance-delay-ms", type=int, default=0)
    ap.add_argument("--connectors", default="conn-a:2,conn-b:1")
    ap.add_argument("--compute-assignment-code", type=int, default=1000)
    ap.add_argument("--mutant", choices=sorted(MUTANTS), help="run with this one deliberate defect")
    a = ap.parse_args(argv)
    w = DraftWorker(a)
    # What it owns, as Connect's REST status says it (a chaos campaign's safety and liveness).
    rest = serve_status(a.rest_port, _as_status(w.universe), lambda: set(_as_status(w.owned)))

    async def go() -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, w.stopping.set)
        await w.run()

    asyncio.run(go())
    rest.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
