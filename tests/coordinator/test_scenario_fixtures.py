"""The executable scenarios of ``fixtures/scenarios/``: the draft's case studies against the
coordinator's connect group (every request and reply through the codec), KIP-415's five
scenarios against the leader-side incremental cooperative assignor. Each file is validated
against ``scenario.schema.json`` first; the format is described there."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from fakebroker.connect.assignor import IncrementalCooperativeAssignor
from fakebroker.coordinator.modern import ConnectGroup
from fakebroker.coordinator.modern.connect import converged_records
from fakebroker.coordinator.errors import DraftErrorCode
from fakebroker.coordinator.reconcile import ClientAssignor, ConnectUnit
from fakebroker.protocol.error_codes import ErrorCode

from .harness import make_config
from .modern import _CG, _IA, ModernHarness, cat_struct, connect_units

DIR = Path(__file__).resolve().parents[2] / "fixtures" / "scenarios"
SCHEMA = json.loads((DIR / "scenario.schema.json").read_text())
FILES = sorted(DIR.glob("*.yaml"))
GROUP = "connect-cluster"


def load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())
    jsonschema.validate(data, SCHEMA)
    return {**data, "file": path.name}  # a scenario is named by its file and its requirements


def unit(name: str) -> ConnectUnit:
    """``AC0`` connector A's instance, ``ATk`` task k-1 of A (ERRATA, Case studies)."""
    if name[1] == "C":
        return ConnectUnit.instance(name[0])
    return ConnectUnit.of_task(name[0], int(name[2:]) - 1)


def units(names: list[str] | None) -> frozenset[ConnectUnit]:
    return frozenset(unit(n) for n in names or [])


def notation(us: frozenset[ConnectUnit]) -> list[str]:
    return sorted(f"{u.connector}C0" if u.is_connector else f"{u.connector}T{u.task + 1}"
                  for u in us)


def error_code(name: str) -> int:
    if name in DraftErrorCode.__members__:
        return int(DraftErrorCode[name])
    return int(ErrorCode[name])


def test_there_are_scenarios() -> None:
    names = {p.stem for p in FILES}
    assert {"draft-cs1-w1-joins", "draft-cs2-w2-joins", "draft-cs3-worker-leaving",
            "draft-cs4-worker-bounces"} <= names
    assert len([n for n in names if n.startswith("kip415-")]) == 5


# ----------------------------------------------------------------------------- connect groups

class GroupRun:
    """Simulated workers driving the coordinator: each runs what it was last given (it
    applies a response at once and reports it in its next heartbeat)."""

    def __init__(self, scenario: dict[str, Any]) -> None:
        self.s = scenario
        self.h = ModernHarness(config=make_config(**scenario.get("config", {})))
        self.assignor_name = scenario.get("assignor", "IncrementalCooperativeAssignor")
        self.epoch: dict[str, int] = {}
        self.owned: dict[str, frozenset[ConnectUnit]] = {}
        self.ranges: dict[str, dict[str, int]] = {}
        initial = scenario.get("initial")
        if initial is not None:
            members = {}
            for mid, m in initial["members"].items():
                self.ranges[mid] = m.get("assignor", {})
                members[mid] = (units(m["units"]), (self.client_assignor(mid),))
                self.epoch[mid] = initial["epoch"]
                self.owned[mid] = units(m["units"])
            group = ConnectGroup(GROUP, self.h.coord.env,
                                 converged_records(GROUP, initial["epoch"], members))
            self.h.coord.adopt(group)

    def client_assignor(self, mid: str, given: dict[str, int] | None = None) -> ClientAssignor:
        r = {**self.ranges.get(mid, {}), **(given or {})}
        low, high = r.get("min", 0), r.get("max", 2)
        return ClientAssignor(self.assignor_name, low, high, reason=r.get("reason", 0),
                              version=r.get("version", high), metadata=b"")

    def wire_assignor(self, mid: str, given: dict[str, int] | None) -> Any:
        a = self.client_assignor(mid, given)
        if given:
            self.ranges[mid] = {**self.ranges.get(mid, {}), **given}
        return _CG.Assignor(name=a.name, minimum_version=a.minimum_version,
                            maximum_version=a.maximum_version, reason=a.reason,
                            version=a.version, metadata=a.metadata)

    def run(self) -> None:
        for index, step in enumerate(self.s["steps"]):
            where = f"{self.s['file']} step {index + 1}" + (f" ({step['note']})" if "note" in step else "")
            if "at" in step:
                self.h.at(step["at"])
            reply = None
            if "heartbeat" in step:
                reply = self.heartbeat(step["heartbeat"])
            elif "prepare" in step:
                p = step["prepare"]
                reply = self.h.prepare(p["member"], p.get("epoch", self.epoch.get(p["member"], 0)),
                                       group=GROUP)
            elif "install" in step:
                reply = self.install(step["install"])
            if "expect" in step:
                assert reply is not None, f"{where}: nothing to expect a reply of"
                self.check_reply(where, reply, step["expect"])
            if "state" in step:
                self.check_state(where, step["state"])

    def heartbeat(self, hb: dict[str, Any]) -> Any:
        mid = hb["member"]
        epoch = hb.get("epoch", self.epoch.get(mid, 0))
        owned = hb["owned"] if "owned" in hb else notation(self.owned.get(mid, frozenset()))
        if epoch == 0 and owned is not None and "owned" not in hb:
            owned = []
        send_assignor = epoch == 0 or "assignor" in hb
        fields = dict(group_id=GROUP, member_id=mid, member_epoch=epoch,
                      rebalance_timeout_ms=60_000 if epoch == 0 else -1,
                      client_assignors=[self.wire_assignor(mid, hb.get("assignor"))]
                      if send_assignor else None,
                      connectors_and_tasks=None if owned is None else cat_struct(tuple(owned)))
        r = self.h.reply(self.h.send("ConnectGroupHeartbeat", 0, **fields))
        if r.error_code in (0, DraftErrorCode.COMPUTE_ASSIGNMENT):
            self.epoch[mid] = r.member_epoch
            if r.assignment is not None:
                self.owned[mid] = connect_units(r.assignment.connectors_and_tasks)
        elif r.error_code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_MEMBER_EPOCH):
            self.epoch[mid], self.owned[mid] = 0, frozenset()  # abandon everything, rejoin
        return r

    def install(self, ins: dict[str, Any]) -> Any:
        mid = ins["member"]
        members = [_IA.Member(member_id=m, connectors_and_tasks=cat_struct(tuple(us), _IA),
                              version=0, metadata=b"")
                   for m, us in ins["assignment"].items()]
        return self.h.reply(self.h.send(
            "ConnectGroupInstallAssignment", 0, group_id=GROUP, member_id=mid,
            member_epoch=ins.get("epoch", self.epoch.get(mid, 0)),
            group_epoch=ins["group_epoch"], error=ins.get("error", 0), members=members))

    @staticmethod
    def check_reply(where: str, r: Any, want: dict[str, Any]) -> None:
        if "error" in want:
            assert r.error_code == error_code(want["error"]), \
                f"{where}: error {r.error_code} ({getattr(r, 'error_message', None)}), want {want['error']}"
        if "member_epoch" in want:
            assert r.member_epoch == want["member_epoch"], f"{where}: member epoch {r.member_epoch}"
        if "assignment" in want:
            got = None if r.assignment is None else notation(connect_units(r.assignment.connectors_and_tasks))
            exp = None if want["assignment"] is None else sorted(want["assignment"])
            assert got == exp, f"{where}: assignment {got}, want {exp}"
        if "assignment_error" in want:
            assert r.assignment is not None and r.assignment.error == want["assignment_error"]
        if "group_epoch" in want:
            assert r.group_epoch == want["group_epoch"], f"{where}: group epoch {r.group_epoch}"
        if "assignor" in want:
            assert r.assignor_name == want["assignor"], f"{where}: assignor {r.assignor_name}"
        if "targets" in want:
            got_t = {m.member_id: notation(connect_units(m.connectors_and_tasks)) for m in r.members}
            exp_t = {m: sorted(us) for m, us in want["targets"].items()}
            assert got_t == exp_t, f"{where}: prepared targets {got_t}, want {exp_t}"

    def check_state(self, where: str, want: dict[str, Any]) -> None:
        group = self.h.coord.connect_group(GROUP)
        if group is None:  # no group yet: the draft's empty group at epoch 0
            got: dict[str, Any] = {"group_epoch": 0, "assignment_epoch": 0, "members": [],
                                   "group_state": "Empty", "selected": None, "target": {},
                                   "current": {}}
        else:
            e = group.engine
            got = {"group_epoch": e.group_epoch, "assignment_epoch": e.assignment_epoch,
                   "members": list(e.member_ids()), "group_state": group.state_name,
                   "selected": e.selected_member,
                   "target": {m: notation(e.target(m).units) for m, _ in e.durable_state().target},
                   "current": {m: {"epoch": e.member(m).current.member_epoch,
                                   "units": notation(e.member(m).current.assigned),
                                   "state": e.member(m).current.state.name}
                               for m in e.member_ids()}}
        for key, exp in want.items():
            if key == "target":
                assert got["target"] == {m: sorted(us) for m, us in exp.items()}, \
                    f"{where}: target {got['target']}"
            elif key == "current":
                for mid, fields in exp.items():
                    assert mid in got["current"], f"{where}: {mid} is not a member"
                    cur = got["current"][mid]
                    for f, v in fields.items():
                        v = sorted(v) if f == "units" else v
                        assert cur[f] == v, f"{where}: {mid}'s {f} is {cur[f]}, want {v}"
            else:
                assert got[key] == exp, f"{where}: {key} is {got[key]}, want {exp}"


GROUP_FILES = [p for p in FILES if yaml.safe_load(p.read_text())["kind"] == "connect-group"]
ASSIGNOR_FILES = [p for p in FILES if yaml.safe_load(p.read_text())["kind"] == "connect-assignor"]


@pytest.mark.parametrize("path", GROUP_FILES, ids=[p.stem for p in GROUP_FILES])
def test_connect_group_scenario(path: Path) -> None:
    GroupRun(load(path)).run()


# ----------------------------------------------------------------------------- KIP-415 assignor

@pytest.mark.parametrize("path", ASSIGNOR_FILES, ids=[p.stem for p in ASSIGNOR_FILES])
def test_kip415_scenario(path: Path) -> None:
    s = load(path)
    configured = units(s["configured"])
    workers: dict[str, IncrementalCooperativeAssignor] = {}

    def assignor(mid: str) -> IncrementalCooperativeAssignor:
        if mid not in workers:
            workers[mid] = IncrementalCooperativeAssignor(max_delay_ms=s.get("max_delay_ms", 300_000))
        return workers[mid]

    initial = s.get("initial")
    if initial is not None:
        assignor(initial["leader"]).previous = {m: units(us) for m, us in initial["assignment"].items()}
        for mid in initial["assignment"]:
            assignor(mid)
    for index, rnd in enumerate(s["rounds"]):
        where = f"{s['file']} round {index + 1}" + (f" ({rnd['note']})" if "note" in rnd else "")
        joins = {m: units(us) for m, us in rnd["joins"].items()}
        for mid in list(workers):
            if mid not in joins:
                del workers[mid]  # it left: a worker that comes back starts afresh
        result = assignor(rnd["leader"]).assign(rnd["at"], configured, joins)
        got = {m: {"delay": a.delay_ms, "assigned": notation(a.assigned),
                   "revoked": notation(a.revoked)} for m, a in result.items()}
        want = {m: {"delay": e["delay"], "assigned": sorted(e["assigned"]),
                    "revoked": sorted(e["revoked"])} for m, e in rnd["expect"].items()}
        assert got == want, f"{where}:\n got  {got}\n want {want}"
        for mid, a in result.items():
            assignor(mid).on_assignment(rnd["at"], a.delay_ms)
            # What each worker runs afterwards never overlaps another's.
        held = [u for a in result.values() for u in a.assigned]
        assert len(held) == len(set(held)), f"{where}: a unit assigned twice"
