"""The draft's connect group: request rules, assignor and worker selection, prepare and
install (validation and errors), and the mapping to the ConnectGroup* messages (encoded
and decoded with the project's codec)."""

from __future__ import annotations

from typing import Any

import pytest

from fakebroker.coordinator.errors import DraftErrorCode, RuleViolation
from fakebroker.coordinator.reconcile import (ClientAssignor, ConnectUnit, EngineConfig, GroupEngine,
                                              Heartbeat, Installed, MemberMetadata, MemberTarget)
from fakebroker.coordinator.reconcile.connect import (connect_selector, eligible_members,
                                                      heartbeat_from_request,
                                                      heartbeat_response, install_targets,
                                                      require_assignors_compatible,
                                                      require_connect_heartbeat_shape,
                                                      selected_assignor)
from fakebroker.coordinator.reconcile.validation import require_units_assigned_once
from fakebroker.protocol import default_registry
from fakebroker.protocol.error_codes import ErrorCode

from .helpers import ALL, REBALANCE_MS, assignors, connect_engine, targets, units

E = ErrorCode
D = DraftErrorCode
REG = default_registry()


def md(*assignor_list: ClientAssignor) -> MemberMetadata:
    return MemberMetadata(client_assignors=assignor_list)


def a(name: str, low: int, high: int) -> ClientAssignor:
    return ClientAssignor(name, low, high, version=high)


def join(mid: str, low: int = 0, high: int = 2) -> Heartbeat:
    return Heartbeat(member_id=mid, member_epoch=0, rebalance_timeout_ms=REBALANCE_MS,
                     client_assignors=assignors(low, high), owned=frozenset())


def test_worker_selection_example() -> None:
    """Draft, Worker Selection: A [1-5], B [3-4], C [2-4]: A must be selected."""
    members = {"A": md(a("x", 1, 5)), "B": md(a("x", 3, 4)), "C": md(a("x", 2, 4))}
    assert eligible_members(members) == ["A"]
    assert connect_selector(members, None) == "A"
    assert connect_selector({"B": md(a("x", 3, 4)), "C": md(a("x", 1, 3))}, None) is None


def test_selection_is_sticky_while_eligible() -> None:
    members = {"A": md(a("x", 0, 2)), "B": md(a("x", 0, 2))}
    assert connect_selector(members, None) == "A"
    assert connect_selector(members, "B") == "B"
    members["B"] = md(a("x", 1, 2))
    assert connect_selector(members, "B") == "A"


def test_assignor_vote() -> None:
    members = {"1": md(a("eager", 0, 0), a("coop", 1, 2)), "2": md(a("coop", 1, 2), a("eager", 0, 0)),
               "3": md(a("coop", 1, 2), a("eager", 0, 0)), "4": md(a("coop", 1, 2))}
    assert selected_assignor(members) == "coop"
    assert selected_assignor({"1": md(a("eager", 0, 0)), "2": md(a("coop", 1, 2))}) is None


@pytest.mark.parametrize("kwargs, rule", [
    ({"group_id": ""}, "group-id-not-empty"),
    ({"member_id": ""}, "member-id-not-empty"),
    ({"member_epoch": -2}, "member-epoch-at-least-minus-one"),
    ({"instance_id": " "}, "instance-id-not-empty"),
    ({"rebalance_timeout_ms": 0}, "join-gives-rebalance-timeout"),
    ({"server_assignor": "x"}, "one-kind-of-assignor"),
    ({"client_assignors": (a("", 0, 1),)}, "assignor-name-not-empty"),
    ({"client_assignors": (a("x", -2, 1),)}, "assignor-minimum-version"),
    ({"client_assignors": (ClientAssignor("x", 2, 1, version=1),)}, "assignor-maximum-version"),
    ({"client_assignors": (ClientAssignor("x", 0, 1, version=3),)}, "assignor-version-in-range"),
    ({"tasks": [("A", -1)]}, "task-id-not-negative"),
])
def test_heartbeat_request_rules(kwargs, rule) -> None:
    fields = dict(group_id="g", member_id="w1", member_epoch=0, instance_id=None,
                  rebalance_timeout_ms=60_000, server_assignor=None,
                  client_assignors=(a("x", 0, 2),))
    fields.update(kwargs)
    with pytest.raises(RuleViolation) as info:
        require_connect_heartbeat_shape(**fields)
    assert info.value.rule == rule and info.value.error == E.INVALID_REQUEST


def test_server_assignor_is_unsupported() -> None:
    with pytest.raises(RuleViolation) as info:
        require_connect_heartbeat_shape(group_id="g", member_id="w", member_epoch=3,
                                        instance_id=None, rebalance_timeout_ms=-1,
                                        server_assignor="uniform", client_assignors=None)
    assert info.value.error == E.UNSUPPORTED_ASSIGNOR


def test_unsupported_assignor_when_no_member_would_cover_all_ranges() -> None:
    engine = connect_engine()
    engine.heartbeat(join("B", 3, 4), 0)
    require_assignors_compatible(engine, "A", assignors(1, 5))     # A covers B: fine
    with pytest.raises(RuleViolation) as info:
        require_assignors_compatible(engine, "C", assignors(0, 3))  # B [3-4], C [0-3]
    assert info.value.error == E.UNSUPPORTED_ASSIGNOR


def _group_with_target() -> tuple:
    engine = connect_engine()
    engine.heartbeat(join("W1"), 0)
    engine.heartbeat(join("W2"), 1)
    return engine


def test_prepare_and_install_rules() -> None:
    engine = _group_with_target()       # group epoch 2, target 0, W1 selected
    assert engine.selected_member == "W1"
    assert engine.prepare_assignment("nobody", 0, 2).error == E.UNKNOWN_MEMBER_ID
    assert engine.prepare_assignment("W1", 5, 2).error == E.FENCED_MEMBER_EPOCH
    r = engine.prepare_assignment("W2", 0, 2)
    assert (r.error, r.rule) == (E.UNKNOWN_MEMBER_ID, "member-selected-to-assign")
    p = engine.prepare_assignment("W1", 0, 2)
    assert p.error == E.NONE and p.group_epoch == 2
    assert [(m.member_id, m.member_epoch) for m in p.members] == [("W1", 0), ("W2", 0)]
    before = engine.durable_state()
    cases = [
        (3, targets(W1=units(*ALL)), "install-epoch-not-ahead"),
        (0, targets(W1=units(*ALL)), "install-epoch-newer-than-target"),
        (2, targets(W1=units(*ALL), W9=units()), "assignment-members-exist"),
        (2, targets(W1=units("AC0"), W2=units("AC0")), "unit-assigned-once"),
    ]
    for epoch, assignment, rule in cases:
        r = engine.install_assignment("W1", 0, epoch, assignment, 3)
        assert (r.error, r.rule) == (D.INVALID_ASSIGNMENT, rule)
        assert engine.durable_state() == before
    assert engine.install_assignment("W2", 0, 2, targets(W1=units(*ALL)), 3).error == \
        E.UNKNOWN_MEMBER_ID
    assert engine.install_assignment("W1", 0, 2, targets(W1=units(*ALL)), 3).error == E.NONE
    assert engine.target("W2").units == frozenset()
    # The unit set record holds the union of the installed target.
    assert sorted(u for us in engine.catalog.values() for u in us) == sorted(units(*ALL))


def test_a_unit_assigned_twice_is_named_in_order() -> None:
    """The first repeat in (member id, unit) order names the error, whatever the sets'
    hash order; a unit listed twice for one member is a repeat too."""
    b, c, d = (ConnectUnit.of_task("C", t) for t in range(3))
    with pytest.raises(RuleViolation) as info:
        require_units_assigned_once({"W2": frozenset({d, c, b}), "W1": frozenset({d, c})})
    assert info.value.message == "C/1 is assigned to W1 and W2"
    with pytest.raises(RuleViolation) as info:
        require_units_assigned_once({"W1": [b, c, b]})
    assert info.value.message == "C/0 is assigned to W1 and W1"
    require_units_assigned_once({"W1": [b], "W2": (c, d), "W3": frozenset()})


def test_install_for_an_older_epoch_drops_departed_members() -> None:
    engine = _group_with_target()
    p = engine.prepare_assignment("W1", 0, 2)
    engine.leave("W2", 3)              # group epoch 3, W2 gone
    r = engine.install_assignment("W1", 0, p.group_epoch,
                                  targets(W1=units("AC0"), W2=units("BC0")), 4)
    assert r.error == E.NONE and engine.assignment_epoch == 2
    assert engine.member_ids() == ("W1",) and engine.is_assignment_due()


def test_assignor_error_keeps_previous_units() -> None:
    """ERRATA 25: with a non-zero Error every member keeps its units, and gets the error."""
    engine = _group_with_target()
    engine.install_assignment("W1", 0, 2, targets(W1=units("AC0"), W2=units("BC0")), 3)
    engine.heartbeat(Heartbeat("W1", 0, rebalance_timeout_ms=1, client_assignors=assignors(0, 2,
                                                                                            1),
                               owned=frozenset()), 4)
    epoch = engine.member("W1").current.member_epoch
    r = engine.install_assignment("W1", epoch, 3, targets(W1=units(*ALL)), 5, error=1)
    assert r.error == E.NONE
    assert engine.target("W1") == MemberTarget(units("AC0"), engine.target("W1").payload)
    assert engine.target("W1").payload.error == 1 and engine.target("W2").payload.error == 1


def test_heartbeat_messages_round_trip_through_the_codec() -> None:
    engine = connect_engine()
    req_t = REG["ConnectGroupHeartbeatRequest"]
    cls = req_t.cls
    req = req_t.new(group_id="connect-cluster", member_id="W1", member_epoch=0,
                    rebalance_timeout_ms=60_000,
                    client_assignors=[cls.Assignor(name="cooperative", minimum_version=0,
                                                   maximum_version=2, reason=0, version=2,
                                                   metadata=b"meta")],
                    connectors_and_tasks=cls.ConnectorsAndTasks(connectors=[], tasks=[]))
    req = req_t.decode(req_t.encode(req, 0), 0)
    result = engine.heartbeat(heartbeat_from_request(req, "client", "/10.0.0.1"), 0)
    resp_t = REG["ConnectGroupHeartbeatResponse"]
    resp = resp_t.decode(resp_t.encode(heartbeat_response(REG, result), 0), 0)
    assert resp.error_code == D.COMPUTE_ASSIGNMENT and resp.member_epoch == 0
    assert resp.heartbeat_interval_ms == 3_000 and resp.assignment is not None

    ins_t = REG["ConnectGroupInstallAssignmentRequest"]
    ic = ins_t.cls
    ins = ins_t.new(group_id="connect-cluster", member_id="W1", member_epoch=0, group_epoch=1,
                    error=0, members=[ic.Member(
                        member_id="W1", version=2, metadata=b"assignment",
                        connectors_and_tasks=ic.ConnectorsAndTasks(
                            connectors=["A", "B"],
                            tasks=[ic.ConnectorTaskId(connector_id="A", task_id=0),
                                   ic.ConnectorTaskId(connector_id="A", task_id=1),
                                   ic.ConnectorTaskId(connector_id="B", task_id=0)]))])
    ins = ins_t.decode(ins_t.encode(ins, 0), 0)
    assert engine.install_assignment("W1", 0, 1, install_targets(ins), 1).error == E.NONE

    r = engine.heartbeat(heartbeat_from_request(
        req_t.new(group_id="connect-cluster", member_id="W1", member_epoch=0,
                  rebalance_timeout_ms=60_000, client_assignors=req.client_assignors,
                  connectors_and_tasks=cls.ConnectorsAndTasks(connectors=[], tasks=[]))), 2)
    resp = resp_t.decode(resp_t.encode(heartbeat_response(REG, r), 0), 0)
    assert (resp.error_code, resp.member_epoch) == (0, 1)
    assert sorted(resp.assignment.connectors_and_tasks.connectors) == ["A", "B"]
    assert [(t.connector_id, t.task_id) for t in resp.assignment.connectors_and_tasks.tasks] == \
        [("A", 0), ("A", 1), ("B", 0)]
    assert (resp.assignment.version, resp.assignment.metadata) == (2, b"assignment")


def test_install_targets_rejects_negative_tasks_and_duplicates() -> None:
    ins_t = REG["ConnectGroupInstallAssignmentRequest"]
    ic = ins_t.cls

    def req(tasks, connectors=("A",)):
        return ins_t.new(group_id="g", member_id="W1", member_epoch=0, group_epoch=1, error=0,
                         members=[ic.Member(member_id="W1", version=0, metadata=b"",
                                            connectors_and_tasks=ic.ConnectorsAndTasks(
                                                connectors=list(connectors),
                                                tasks=[ic.ConnectorTaskId(connector_id=c,
                                                                          task_id=t)
                                                       for c, t in tasks]))])

    with pytest.raises(RuleViolation) as info:
        install_targets(req([("A", -1)]))
    assert info.value.rule == "task-id-not-negative"
    with pytest.raises(RuleViolation) as info:
        install_targets(req([("A", 0), ("A", 0)]))
    assert info.value.rule == "unit-assigned-once"


def test_unchanged_assignors_are_checked_against_the_group_as_it_is() -> None:
    """A heartbeat repeating its assignors is checked from the answer kept for the group's
    metadata, which a leave renews: with A [1-4] gone, nobody covers B [1-2] and C [3-4]."""
    engine = connect_engine()
    engine.heartbeat(join("A", 1, 4), 0)
    engine.heartbeat(join("B", 1, 2), 1)
    engine.heartbeat(join("C", 3, 4), 2)
    require_assignors_compatible(engine, "B", assignors(1, 2))
    require_assignors_compatible(engine, "B", None)
    engine.leave("A", 3)
    for repeated in (assignors(1, 2), None):
        with pytest.raises(RuleViolation) as info:
            require_assignors_compatible(engine, "B", repeated)
        assert info.value.error == E.UNSUPPORTED_ASSIGNOR


def test_the_selection_is_made_again_only_when_metadata_changes() -> None:
    """While a target is due every heartbeat asks who computes it: for unchanged metadata
    the kept answer serves (O(1) per heartbeat, not a pass over the members)."""
    seen: list[int] = []

    def counting(members: Any, previous: str | None) -> str | None:
        seen.append(len(members))
        return connect_selector(members, previous)

    engine: GroupEngine[ConnectUnit] = GroupEngine(EngineConfig.connect("g"), Installed(selector=counting))
    epochs = {m: engine.heartbeat(join(m), t).member_epoch for t, m in enumerate(["W1", "W2", "W3"])}
    assert engine.is_assignment_due()
    before = len(seen)
    for t in range(10, 40):
        m = ["W1", "W2", "W3"][t % 3]
        r = engine.heartbeat(Heartbeat(member_id=m, member_epoch=epochs[m]), t)
        assert r.error == E.NONE and r.compute_assignment == (m == "W1")
    assert len(seen) - before <= 1
    engine.leave("W1", 50)  # W1 was selected: the choice is made again, among W2 and W3
    r = engine.heartbeat(Heartbeat(member_id="W2", member_epoch=epochs["W2"]), 51)
    assert r.compute_assignment and seen[-1] == 2
