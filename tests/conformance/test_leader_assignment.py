"""Reading a worker leader's SyncGroup: the entry for one member, strictly decoded, or a
violation naming what was missing (a leader that leaves a member out failed the case with
"coroutine raised StopIteration", reported BROKEN instead of FAIL)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from conformance.harness.outcomes import Violation
from conformance.suites.worker.steps import leader_assignment_to
from fakebroker.connect.embedded import assignment_bytes


def sync_request(**given: bytes) -> SimpleNamespace:
    return SimpleNamespace(assignments=[SimpleNamespace(member_id=m, assignment=a) for m, a in given.items()])


def test_the_members_entry_is_decoded() -> None:
    request = sync_request(w1=assignment_bytes(1, leader="w1", assigned=[("conn-a", -1)]),
                           w2=assignment_bytes(1, leader="w1", assigned=[("conn-a", 0)]))
    version, asg = leader_assignment_to(request, "w2", "the peer's assignment")
    assert version == 1 and asg.leader == "w1"
    assert [(c.connector, list(c.tasks)) for c in asg.assignment] == [("conn-a", [0])]


def test_a_member_left_out_is_a_violation_naming_the_members_given() -> None:
    request = sync_request(w1=assignment_bytes(1, leader="w1"))
    with pytest.raises(Violation) as e:
        leader_assignment_to(request, "w2", "the peer's assignment")
    assert "w2" in str(e.value.expected) and e.value.actual == ["w1"]


def test_an_undecodable_entry_is_a_violation() -> None:
    with pytest.raises(Violation):
        leader_assignment_to(sync_request(w1=b"\x00\x01\xff"), "w1", "the leader's own assignment")
