"""The draft's connect group through ConnectGroupHeartbeat (1000), ConnectGroupPrepareAssignment
(1001) and ConnectGroupInstallAssignment (1002): every request is encoded and decoded at its
version (v0, the only one) and so is every reply, on a virtual clock.

Each validation rule and error of the draft (as ``schemas/ERRATA.md`` resolves it) has a
request that violates it, the exact code it gets, and - for an error response - the group's
state compared before and after: an error changes nothing (except FENCED_MEMBER_EPOCH on a
heartbeat, which removes the member, Request Handling step 3)."""

from __future__ import annotations

from typing import Any

import pytest

from fakebroker.coordinator.events import (AssignmentComputeRequested, GroupCreated,
                                           GroupDeleted, MemberRemoved, RemovalReason)

from .modern import (_CG, _IA, D, E, ModernHarness, cat_struct, connect_assignor,
                     connect_units, live_records, names)
from .harness import make_config

ALL = ("AC0", "AT1", "AT2", "BC0", "BT1")


@pytest.fixture
def h() -> ModernHarness:
    return ModernHarness(config=make_config())


def snapshot(h: ModernHarness, group: str = "g") -> Any:
    """Everything an error must leave alone: the groups, the engine's durable state and
    timers, the member selected to compute, and the coordinator's deadlines."""
    g = h.coord.groups.get(group)
    engine = getattr(g, "engine", None)
    return (sorted(h.coord.groups), type(g).__name__,
            engine.durable_state() if engine else None,
            engine.timer_state() if engine else None,
            engine.selected_member if engine else None, h.coord.next_deadline())


def one_worker(h: ModernHarness, *units: str, member: str = "w1") -> None:
    """A group of one worker that installed ``units`` and owns them (group epoch 1)."""
    r = h.connect_hb(member, 0)
    assert (r.error_code, r.member_epoch) == (D.COMPUTE_ASSIGNMENT, 0)
    assert h.install(member, 1, {member: units}).error_code == 0
    r = h.connect_hb(member, owned=())
    assert (r.error_code, r.member_epoch) == (0, 1)
    assert names(connect_units(r.assignment.connectors_and_tasks)) == set(units)


def two_workers(h: ModernHarness) -> None:
    """w1 holds AC0 AT1 AT2, w2 holds BC0 BT1, both at epoch 2, target installed by w1."""
    one_worker(h, *ALL)
    assert h.connect_hb("w2", 0).error_code == 0
    r = h.connect_hb("w1", owned=ALL)
    assert r.error_code == D.COMPUTE_ASSIGNMENT
    assert h.install("w1", 2, {"w1": ("AC0", "AT1", "AT2"), "w2": ("BC0", "BT1")}).error_code == 0
    h.connect_hb("w1", owned=ALL)                       # revoke BC0 BT1
    h.connect_hb("w1", owned=("AC0", "AT1", "AT2"))     # acknowledged: epoch 2
    r = h.connect_hb("w2", owned=())
    assert names(connect_units(r.assignment.connectors_and_tasks)) == {"BC0", "BT1"}
    assert h.connect().state_name == "Stable"


# ----------------------------------------------------------------------------- heartbeat rules

def _hb(**overrides: Any) -> dict[str, Any]:
    f: dict[str, Any] = dict(group_id="g", member_id="w9", member_epoch=0, instance_id=None,
                             rebalance_timeout_ms=60_000, server_assignor=None,
                             client_assignors=[connect_assignor()],
                             connectors_and_tasks=cat_struct(()))
    f.update(overrides)
    return f


def _task(connector: str, task: int) -> Any:
    return _CG.ConnectorsAndTasks(connectors=[], tasks=[
        _CG.ConnectorTaskId(connector_id=connector, task_id=task)])


HEARTBEAT_RULES = [
    # Request Validation: INVALID_REQUEST, in the draft's order.
    ("group id empty", _hb(group_id=""), E.INVALID_REQUEST),
    ("group id blank", _hb(group_id="  "), E.INVALID_REQUEST),
    ("member id empty", _hb(member_id=""), E.INVALID_REQUEST),
    ("member epoch below -1", _hb(member_epoch=-2), E.INVALID_REQUEST),
    ("instance id empty", _hb(instance_id=""), E.INVALID_REQUEST),
    ("first heartbeat without rebalance timeout", _hb(rebalance_timeout_ms=-1), E.INVALID_REQUEST),
    ("first heartbeat with rebalance timeout 0", _hb(rebalance_timeout_ms=0), E.INVALID_REQUEST),
    ("server and client assignors together", _hb(server_assignor="x"), E.INVALID_REQUEST),
    ("assignor name empty", _hb(client_assignors=[connect_assignor("")]), E.INVALID_REQUEST),
    ("assignor minimum version below -1", _hb(client_assignors=[connect_assignor(low=-2)]),
     E.INVALID_REQUEST),
    ("assignor maximum version negative",
     _hb(client_assignors=[connect_assignor(low=-1, high=-1, version=-1)]), E.INVALID_REQUEST),
    ("assignor maximum below minimum",
     _hb(client_assignors=[connect_assignor(low=2, high=1, version=1)]), E.INVALID_REQUEST),
    ("assignor version above range", _hb(client_assignors=[connect_assignor(version=3)]),
     E.INVALID_REQUEST),
    ("assignor version below range",
     _hb(client_assignors=[connect_assignor(low=1, version=0)]), E.INVALID_REQUEST),
    ("negative task id (ERRATA 2)", _hb(connectors_and_tasks=_task("A", -1)), E.INVALID_REQUEST),
    # UNSUPPORTED_ASSIGNOR.
    ("server assignor (ERRATA 27)", _hb(server_assignor="uniform", client_assignors=None),
     E.UNSUPPORTED_ASSIGNOR),
    ("version range overlaps no member's (ERRATA 19)",
     _hb(client_assignors=[connect_assignor(low=3, high=4)]), E.UNSUPPORTED_ASSIGNOR),
    ("no assignor in common", _hb(client_assignors=[connect_assignor("eager")]),
     E.UNSUPPORTED_ASSIGNOR),
    ("join without assignors", _hb(client_assignors=None), E.UNSUPPORTED_ASSIGNOR),
    # Request Handling.
    ("unknown member (step 2)", _hb(member_epoch=1), E.UNKNOWN_MEMBER_ID),
    ("unknown member leaving", _hb(member_epoch=-1), E.UNKNOWN_MEMBER_ID),
    ("unknown group (no GROUP_ID_NOT_FOUND for this API)", _hb(group_id="nope", member_epoch=1),
     E.UNKNOWN_MEMBER_ID),
]


@pytest.mark.parametrize("what, request_fields, error", HEARTBEAT_RULES,
                         ids=[r[0] for r in HEARTBEAT_RULES])
def test_heartbeat_rule(h, what, request_fields, error) -> None:
    one_worker(h, *ALL)  # w1 with range [0, 2] of "sessioned", epoch 1
    before = snapshot(h)
    r = h.reply(h.send("ConnectGroupHeartbeat", 0, **request_fields))
    assert r.error_code == error, r
    assert r.error_message
    assert (r.member_epoch, r.heartbeat_interval_ms, r.assignment) == (0, 0, None)
    assert snapshot(h) == before
    assert "nope" not in h.coord.groups


def test_assignor_change_breaking_the_overlap(h) -> None:
    """UNSUPPORTED_ASSIGNOR for a member whose new range leaves no member covering every
    other's: the change is refused, the member keeps its old assignors."""
    two_workers(h)
    before = snapshot(h)
    r = h.connect_hb("w2", owned=("BC0", "BT1"), assignors=[connect_assignor(low=3, high=4)])
    assert E(r.error_code) is E.UNSUPPORTED_ASSIGNOR
    assert snapshot(h) == before


def test_fenced_member_epoch_removes_the_member(h) -> None:
    """Request Handling step 3: FENCED_MEMBER_EPOCH, and the member is removed (a new group
    epoch); the worker rejoins with epoch 0 under the same id (ERRATA 26)."""
    two_workers(h)
    # Behind (its previous epoch, but owning work it was not given: not the lost-response
    # case), then ahead.
    for stale in (1, 5):
        h.take_events()
        epoch = h.connect().engine.group_epoch
        r = h.connect_hb("w2", stale, owned=("BC0", "BT1", "AC0"))
        assert (E(r.error_code), r.assignment) == (E.FENCED_MEMBER_EPOCH, None)
        assert h.connect().engine.member_ids() == ("w1",)
        assert h.connect().engine.group_epoch == epoch + 1
        assert any(isinstance(e, MemberRemoved) and e.reason is RemovalReason.FENCED_EPOCH
                   for e in h.take_events())
        r = h.connect_hb("w2", 0)
        assert r.error_code == 0 and h.connect().engine.member_ids() == ("w1", "w2")
        h.connect_hb("w1", owned=h_owned(h, "w1"))


def h_owned(h: ModernHarness, member: str) -> tuple[str, ...]:
    return tuple(names(h.connect().engine.member(member).current.assigned))


def test_lost_response_is_accepted(h) -> None:
    """Step 3's edge case: the previous epoch with owned work a subset of the member's."""
    two_workers(h)
    r = h.connect_hb("w1", 1, owned=("AC0", "AT1"))
    assert (r.error_code, r.member_epoch) == (0, 2)


def test_heartbeat_to_another_group_type(h) -> None:
    # A classic group of another protocol type (one of type "connect" migrates instead:
    # test_connect_migration.py).
    (mid,), _ = h.stable_group(1, protocol_type="consumer")
    before = snapshot(h)
    r = h.connect_hb("w1", 0)
    assert (E(r.error_code), r.error_message) == (E.GROUP_ID_NOT_FOUND, "Group g is not a connect group.")
    assert snapshot(h) == before
    # Once the classic group is empty, a connect worker's join converts the id.
    h.leave(mid)
    h.take_events()
    assert h.connect_hb("w1", 0).error_code == D.COMPUTE_ASSIGNMENT
    assert h.group().type == "connect"
    events = h.take_events()
    assert events[0] == GroupDeleted("g", h.now, "classic", "connect")
    assert events[1] == GroupCreated("g", h.now, "connect")
    # And back: JoinGroup to a non-empty connect group, then to an empty one.
    assert h.error(h.join()) is E.INCONSISTENT_GROUP_PROTOCOL
    assert h.connect_hb("w1", -1).member_epoch == -1
    mid, _ = h.new_member()
    assert h.group().type == "classic"


# ----------------------------------------------------------------------------- compute and install

def test_compute_assignment_goes_to_the_selected_member(h) -> None:
    """COMPUTE_ASSIGNMENT with every other field valid (ERRATA 17), to the member whose
    range covers every other (draft, Worker Selection: A [1-5], B [3-4], C [2-4] -> A)."""
    for member, low, high in (("B", 3, 4), ("C", 2, 4), ("A", 1, 5)):
        r = h.connect_hb(member, 0, assignors=[connect_assignor(low=low, high=high)])
        assert r.error_code in (0, D.COMPUTE_ASSIGNMENT), r
    assert h.connect().engine.selected_member == "A"
    for member in ("B", "C"):
        r = h.connect_hb(member, owned=())
        assert (r.error_code, r.member_epoch, r.heartbeat_interval_ms) == (0, 0, 3000)
    r = h.connect_hb("A", owned=())
    assert (r.error_code, r.member_epoch, r.heartbeat_interval_ms) == (D.COMPUTE_ASSIGNMENT, 0, 3000)
    assert AssignmentComputeRequested("g", h.now, "A", 3) in h.take_events()
    p = h.prepare("A")
    assert (p.error_code, p.group_epoch, p.assignor_name) == (0, 3, "sessioned")
    assert [(m.member_id, m.member_epoch, m.assignor.version, m.assignor.reason,
             bytes(m.assignor.metadata)) for m in p.members] == \
        [("A", 0, 5, 0, b"meta"), ("B", 0, 4, 0, b"meta"), ("C", 0, 4, 0, b"meta")]
    assert h.install("A", 3, {"A": ("AC0",), "B": ("AT1",), "C": ("AT2",)}).error_code == 0
    for member, unit in (("A", "AC0"), ("B", "AT1"), ("C", "AT2")):
        r = h.connect_hb(member, owned=())
        assert (r.error_code, r.member_epoch) == (0, 3)
        assert names(connect_units(r.assignment.connectors_and_tasks)) == {unit}
        assert (r.assignment.version, bytes(r.assignment.metadata)) == (1, b"md-" + member.encode())


def test_prepare_returns_the_current_target(h) -> None:
    two_workers(h)
    h.connect_hb("w3", 0)
    r = h.connect_hb("w1", owned=("AC0", "AT1", "AT2"))
    assert r.error_code == D.COMPUTE_ASSIGNMENT
    p = h.prepare("w1")
    assert p.group_epoch == 3
    targets = {m.member_id: names(connect_units(m.connectors_and_tasks)) for m in p.members}
    assert targets == {"w1": {"AC0", "AT1", "AT2"}, "w2": {"BC0", "BT1"}, "w3": set()}
    assert [m.instance_id for m in p.members] == [None, None, None]


def test_reason_change_triggers_a_new_group_epoch(h) -> None:
    """ERRATA 21-22: a changed Reason is a metadata change: a new group epoch, and the
    selected member is asked to compute."""
    two_workers(h)
    epoch = h.connect().engine.group_epoch
    r = h.connect_hb("w2", owned=("BC0", "BT1"), assignors=[connect_assignor(reason=1)])
    assert r.error_code == 0 and h.connect().engine.group_epoch == epoch + 1
    assert h.connect_hb("w1").error_code == D.COMPUTE_ASSIGNMENT
    assert h.connect().state_name == "Assigning"
    r = h.connect_hb("w2", owned=("BC0", "BT1"), assignors=[connect_assignor(reason=1)])
    assert h.connect().engine.group_epoch == epoch + 1  # unchanged metadata: no new epoch
    p = h.prepare("w1")
    assert {m.member_id: m.assignor.reason for m in p.members} == {"w1": 0, "w2": 1}


def test_assignor_error_keeps_current_assignments(h) -> None:
    """Assignment Error / ERRATA 25: a non-zero Error installs the previous work for every
    member at the new epoch and carries the error in each member's Assignment.Error."""
    two_workers(h)
    h.connect_hb("w3", 0)
    assert h.connect_hb("w1", owned=("AC0", "AT1", "AT2")).error_code == D.COMPUTE_ASSIGNMENT
    r = h.install("w1", 3, {"w1": ("AC0",), "w2": (), "w3": ("BT1",)}, error=1)
    assert r.error_code == 0
    engine = h.connect().engine
    assert engine.assignment_epoch == 3
    assert {m: names(engine.target(m).units) for m in engine.member_ids()} == \
        {"w1": {"AC0", "AT1", "AT2"}, "w2": {"BC0", "BT1"}, "w3": set()}
    r = h.connect_hb("w1", owned=("AC0", "AT1", "AT2"))
    assert (r.error_code, r.member_epoch, r.assignment.error) == (0, 3, 1)
    assert names(connect_units(r.assignment.connectors_and_tasks)) == {"AC0", "AT1", "AT2"}


def _prepared(h: ModernHarness) -> None:
    """w1 and w2 at epoch 2; w3 joined (group epoch 3); w1 selected to compute."""
    two_workers(h)
    h.connect_hb("w3", 0)
    assert h.connect_hb("w1", owned=("AC0", "AT1", "AT2")).error_code == D.COMPUTE_ASSIGNMENT


PREPARE_RULES = [
    ("group id empty", dict(group_id=""), E.INVALID_REQUEST),
    ("member id empty", dict(member_id=""), E.INVALID_REQUEST),
    ("member epoch negative", dict(member_epoch=-1), E.INVALID_REQUEST),
    ("group missing", dict(group_id="nope"), E.GROUP_ID_NOT_FOUND),
    ("group of another type", dict(group_id="classic"), E.GROUP_ID_NOT_FOUND),
    ("member unknown", dict(member_id="w9"), E.UNKNOWN_MEMBER_ID),
    ("member epoch stale", dict(member_epoch=1), E.FENCED_MEMBER_EPOCH),
    ("member epoch ahead", dict(member_epoch=3), E.FENCED_MEMBER_EPOCH),
    ("member not selected", dict(member_id="w2"), E.UNKNOWN_MEMBER_ID),
]


@pytest.mark.parametrize("what, fields, error", PREPARE_RULES, ids=[r[0] for r in PREPARE_RULES])
def test_prepare_rule(h, what, fields, error) -> None:
    _prepared(h)
    h.stable_group(1, group="classic")
    before = snapshot(h)
    f = dict(group_id="g", member_id="w1", member_epoch=2)
    f.update(fields)
    r = h.reply(h.send("ConnectGroupPrepareAssignment", 0, **f))
    assert E(r.error_code) is error and r.error_message
    assert (r.group_epoch, r.assignor_name, r.members) == (0, "", [])
    assert snapshot(h) == before


def _install_members(assignment: list[tuple[str, Any]]) -> list[Any]:
    return [_IA.Member(member_id=m, connectors_and_tasks=cat, version=1, metadata=b"")
            for m, cat in assignment]


def _ia_cat(*units: str, tasks: list[tuple[str, int]] | None = None) -> Any:
    c = cat_struct(units, _IA)
    for connector, task in tasks or []:
        c.tasks.append(_IA.ConnectorTaskId(connector_id=connector, task_id=task))
    return c


GOOD = [("w1", ("AC0", "AT1")), ("w2", ("BC0", "BT1")), ("w3", ("AT2",))]


def _members(pairs: list[tuple[str, Any]]) -> list[Any]:
    return _install_members([(m, _ia_cat(*us) if isinstance(us, tuple) else us) for m, us in pairs])


INSTALL_RULES = [
    ("group id empty", dict(group_id=""), E.INVALID_REQUEST),
    ("member id empty", dict(member_id=""), E.INVALID_REQUEST),
    ("member epoch negative", dict(member_epoch=-1), E.INVALID_REQUEST),
    ("group missing", dict(group_id="nope"), E.GROUP_ID_NOT_FOUND),
    ("group of another type", dict(group_id="classic"), E.GROUP_ID_NOT_FOUND),
    ("member unknown", dict(member_id="w9"), E.UNKNOWN_MEMBER_ID),
    ("member epoch stale", dict(member_epoch=1), E.FENCED_MEMBER_EPOCH),
    ("member not selected", dict(member_id="w2"), E.UNKNOWN_MEMBER_ID),
    # Assignment validation (ERRATA 20): INVALID_ASSIGNMENT.
    ("group epoch ahead of the group's", dict(group_epoch=4), D.INVALID_ASSIGNMENT),
    ("group epoch not newer than the target", dict(group_epoch=2), D.INVALID_ASSIGNMENT),
    ("a member not in the group at that epoch",
     dict(members=_members(GOOD + [("w9", ())])), D.INVALID_ASSIGNMENT),
    ("a member listed twice", dict(members=_members(GOOD + [("w3", ())])), D.INVALID_ASSIGNMENT),
    ("a task assigned to two members",
     dict(members=_members([("w1", ("AC0", "AT1")), ("w2", ("BC0", "BT1")), ("w3", ("AT1",))])),
     D.INVALID_ASSIGNMENT),
    ("a connector assigned to two members",
     dict(members=_members([("w1", ("AC0",)), ("w2", ("AC0",)), ("w3", ())])),
     D.INVALID_ASSIGNMENT),
    ("a task listed twice for one member",
     dict(members=_members([("w1", _ia_cat("AT1", tasks=[("A", 0)]))])), D.INVALID_ASSIGNMENT),
    ("a negative task id",
     dict(members=_members([("w1", _ia_cat(tasks=[("A", -1)]))])), D.INVALID_ASSIGNMENT),
]


@pytest.mark.parametrize("what, fields, error", INSTALL_RULES, ids=[r[0] for r in INSTALL_RULES])
def test_install_rule(h, what, fields, error) -> None:
    _prepared(h)
    h.stable_group(1, group="classic")
    before = snapshot(h)
    f: dict[str, Any] = dict(group_id="g", member_id="w1", member_epoch=2, group_epoch=3,
                             error=0, members=_members(GOOD))
    f.update(fields)
    r = h.reply(h.send("ConnectGroupInstallAssignment", 0, **f))
    assert r.error_code == int(error) and r.error_message
    assert snapshot(h) == before
    # The valid install still goes through afterwards.
    ok = dict(group_id="g", member_id="w1", member_epoch=2, group_epoch=3, error=0,
              members=_members(GOOD))
    assert h.reply(h.send("ConnectGroupInstallAssignment", 0, **ok)).error_code == 0


def test_install_for_a_member_that_left_since(h) -> None:
    """Validation is against the membership at the install's GroupEpoch: w3 joined at 3
    and left at 4; an install for epoch 3 naming w3 is valid, w3's entry is dropped."""
    _prepared(h)
    assert h.connect_hb("w3", -1).member_epoch == -1
    assert h.connect().engine.group_epoch == 4
    r = h.install("w1", 3, {"w1": ("AC0", "AT1"), "w2": ("BC0", "BT1"), "w3": ("AT2",)})
    assert r.error_code == 0
    engine = h.connect().engine
    assert engine.assignment_epoch == 3 and engine.is_assignment_due()
    assert engine.member_ids() == ("w1", "w2")
    # An install for an epoch whose membership is no longer known is refused.
    assert h.install("w1", 3, {"w1": ALL}).error_code == D.INVALID_ASSIGNMENT


def test_empty_install_leaves_work_unassigned(h) -> None:
    """ERRATA 20: completeness is not the coordinator's to check (KIP-415's delay)."""
    _prepared(h)
    assert h.install("w1", 3, {"w1": ("AC0",)}).error_code == 0


# ----------------------------------------------------------------------------- timers

def test_session_timeout_removes_a_silent_worker(h) -> None:
    two_workers(h)
    h.advance(9_000)
    h.connect_hb("w1", owned=("AC0", "AT1", "AT2"))
    h.take_events()
    h.run_until(lambda: h.connect().engine.member_ids() == ("w1",))
    assert h.now == 10_000  # w2's last heartbeat was at 0, its session is 10 s
    assert any(isinstance(e, MemberRemoved) and e.reason is RemovalReason.SESSION_TIMEOUT
               for e in h.take_events())
    assert h.connect_hb("w1", owned=("AC0", "AT1", "AT2")).error_code == D.COMPUTE_ASSIGNMENT


def test_rebalance_timeout_removes_a_worker_that_keeps_revoked_work(h) -> None:
    one_worker(h, *ALL)
    h.connect_hb("w2", 0)
    h.connect_hb("w1", owned=ALL)
    h.install("w1", 2, {"w1": ("AC0",), "w2": ("AT1", "AT2", "BC0", "BT1")})
    r = h.connect_hb("w1", owned=ALL)
    assert names(connect_units(r.assignment.connectors_and_tasks)) == {"AC0"}  # revoke the rest
    h.take_events()
    for _ in range(30):  # w1 keeps heartbeating but never lets the work go
        h.advance(2_000)
        h.connect_hb("w2", owned=())
        if h.connect().engine.has_member("w1"):
            h.connect_hb("w1", owned=ALL)
    assert not h.connect().engine.has_member("w1")
    removed = [e for e in h.take_events() if isinstance(e, MemberRemoved)]
    assert [(e.member_id, e.reason) for e in removed] == [("w1", RemovalReason.REBALANCE_TIMEOUT)]
    assert removed[0].at_ms == 60_000  # the revocation was asked at 0; its rebalance timeout is 60 s


def test_describe_and_list_show_connect_groups(h) -> None:
    two_workers(h)
    listed = h.list_groups().groups
    assert [(g.group_id, g.group_type, g.protocol_type, g.group_state) for g in listed] == \
        [("g", "connect", "connect", "Stable")]
    d = h.describe("g").groups[0]
    assert (E(d.error_code), d.error_message) == (E.GROUP_ID_NOT_FOUND, "Group g is not a classic group.")
    c = h.cgdescribe("g").groups[0]
    assert E(c.error_code) is E.GROUP_ID_NOT_FOUND


# ----------------------------------------------------------------------------- memory

def test_a_long_lived_group_keeps_its_live_records_not_every_record_written(h: ModernHarness) -> None:
    """A coordinator without a group log keeps what a compacted topic would: a group whose
    members come and go for a long time holds as many records after 60 join/leave cycles
    as after 10 (it kept every record ever written, so ``fakebroker serve`` grew forever)."""
    two_workers(h)

    def cycles(n: int) -> None:
        for _ in range(n):
            assert h.connect_hb("w3", 0).error_code == 0
            assert h.connect_hb("w3", -1).member_epoch == -1

    cycles(10)
    after_10 = live_records()
    cycles(50)
    assert live_records() <= after_10


def test_each_results_records_are_the_ones_its_input_wrote(h: ModernHarness) -> None:
    """``CoordinatorResult.records``: the records the connect groups wrote, each handed
    back once, with the input that wrote it, in the order of the store's log."""
    from fakebroker.coordinator.reconcile.records import InMemoryRecordStore

    store = h.coord.connect_store = InMemoryRecordStore()
    h.records = []
    h.connect_hb("w1", 0)
    first = list(h.records)
    assert first and first == store.log
    h.connect_hb("w2", 0)
    h.connect_hb("w1")
    assert len(h.records) > len(first)
    assert h.records == store.log
