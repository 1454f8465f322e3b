"""DescribeGroups in each state, and ListGroups with its filters."""

from __future__ import annotations

from typing import Any

import pytest

from fakebroker.coordinator.apis.describe_groups import GROUP_AUTHORIZED_OPERATIONS

from .harness import E, Harness
from .test_classic_join import OtherTypeGroup
from .test_classic_sync import completing

INT32_MIN = -(2**31)


def described(h: Harness, version: int = 6) -> Any:
    (d,) = h.describe("g", version=version).groups
    return d


def test_described_empty_group(h: Harness) -> None:
    ids, gen = h.stable_group(1)
    h.leave(ids[0])
    d = described(h)
    assert (d.error_code, d.group_state, d.protocol_type, d.protocol_data, d.members) == \
        (0, "Empty", "connect", "", [])


def test_described_preparing_rebalance_has_no_metadata(h: Harness) -> None:
    ids, gen = h.stable_group(2, assignments={0: b"A", 1: b"B"})
    h.join(ids[0], client_id="c1")
    d = described(h)
    assert (d.group_state, d.protocol_type, d.protocol_data) == ("PreparingRebalance", "connect", "")
    assert [(m.member_id, m.member_metadata, m.member_assignment) for m in d.members] == [
        (ids[0], b"", b"A"), (ids[1], b"", b"B")]


def test_described_completing_rebalance(h: Harness) -> None:
    ids, gen = completing(h, 2)
    d = described(h)
    assert (d.group_state, d.protocol_data) == ("CompletingRebalance", "")
    assert [m.member_metadata for m in d.members] == [b"", b""]


def test_described_stable_group(h: Harness) -> None:
    ids, gen = h.stable_group(2, assignments={0: b"A", 1: b"B"}, protocols=(("sessioned", b"M"),))
    d = described(h)
    assert (d.error_code, d.error_message, d.group_state, d.protocol_type, d.protocol_data) == \
        (0, None, "Stable", "connect", "sessioned")
    assert [(m.member_id, m.client_id, m.client_host, m.member_metadata, m.member_assignment)
            for m in d.members] == [(ids[0], "c1", "/127.0.0.1", b"M", b"A"),
                                    (ids[1], "c2", "/127.0.0.1", b"M", b"B")]
    assert d.authorized_operations == INT32_MIN


def test_described_dead_group(h: Harness) -> None:
    ids, gen = h.stable_group(1)
    h.mark_dead()
    d = described(h)
    assert (d.error_code, d.group_state, d.protocol_type) == (0, "Dead", "connect")
    assert [m.member_id for m in d.members] == ids


def test_static_members_show_their_instance_id_from_v4(h: Harness) -> None:
    r = h.join(client_id="c", instance="inst")
    h.advance(3000)
    for version, expected in ((3, None), (4, "inst")):
        assert described(h, version).members[0].group_instance_id == expected
    assert h.reply(r).member_id == "inst-1"


@pytest.mark.parametrize("version", range(0, 6))
def test_unknown_group_before_v6_is_a_dead_placeholder(h: Harness, version: int) -> None:
    (d,) = h.describe("nope", version=version).groups
    assert (d.error_code, d.group_id, d.group_state, d.protocol_type, d.members) == \
        (0, "nope", "Dead", "", [])


def test_unknown_group_from_v6_is_not_found(h: Harness) -> None:
    h.coord.groups["other"] = OtherTypeGroup("other")
    missing, other = h.describe("nope", "other", version=6, ops=True).groups
    assert (missing.error_code, missing.error_message) == (E.GROUP_ID_NOT_FOUND, "Group nope not found.")
    assert (other.error_code, other.error_message) == \
        (E.GROUP_ID_NOT_FOUND, "Group other is not a classic group.")
    assert missing.authorized_operations == INT32_MIN  # only described groups get them


def test_authorized_operations_when_asked(h: Harness) -> None:
    h.stable_group(1)
    assert h.describe("g", version=3, ops=True).groups[0].authorized_operations == \
        GROUP_AUTHORIZED_OPERATIONS == 0b1101_0100_1000  # bits 3, 6, 8, 10, 11
    # Before v6 an unknown group is described (Dead, no error), so it gets them too.
    assert h.describe("nope", version=5, ops=True).groups[0].authorized_operations == \
        GROUP_AUTHORIZED_OPERATIONS


def test_several_groups_in_request_order(h: Harness) -> None:
    h.stable_group(1, group="b")
    h.stable_group(1, group="a")
    r = h.describe("b", "zzz", "a", version=5)
    assert [(d.group_id, d.group_state) for d in r.groups] == [
        ("b", "Stable"), ("zzz", "Dead"), ("a", "Stable")]


# ---------------------------------------------------------------------- ListGroups

def groups_of(h: Harness, **kw: object) -> list[tuple[str, ...]]:
    r = h.list_groups(**kw)  # type: ignore[arg-type]
    assert r.error_code == 0
    return [(g.group_id, g.protocol_type, g.group_state, g.group_type) for g in r.groups]


@pytest.fixture
def many(h: Harness) -> Harness:
    h.stable_group(1, group="stable")
    ids, _ = h.stable_group(1, group="empty")
    h.leave(ids[0], group="empty")
    h.join(group="pending")  # Empty, no protocol type yet
    h.stable_group(1, group="dead")
    h.mark_dead("dead")
    h.coord.groups["other"] = OtherTypeGroup("other")
    return h


def test_lists_every_group_by_id(many: Harness) -> None:
    assert groups_of(many) == [
        ("dead", "connect", "Dead", "classic"),
        ("empty", "connect", "Empty", "classic"),
        ("other", "consumer", "Stable", "consumer"),
        ("pending", "", "Empty", "classic"),
        ("stable", "connect", "Stable", "classic")]


@pytest.mark.parametrize("version", range(0, 4))
def test_old_versions_carry_id_and_protocol_type_only(many: Harness, version: int) -> None:
    assert groups_of(many, version=version)[0] == ("dead", "connect", "", "")


def test_states_filter(many: Harness) -> None:
    assert [g[0] for g in groups_of(many, version=4, states=[" EMPTY ", "dead"])] == \
        ["dead", "empty", "pending"]
    assert groups_of(many, version=4, states=["no-such-state"]) == []


def test_types_filter(many: Harness) -> None:
    assert [g[0] for g in groups_of(many, types=["Consumer"])] == ["other"]
    assert len(groups_of(many, types=["CLASSIC"])) == 4
    assert groups_of(many, types=["share"]) == []
    assert [g[0] for g in groups_of(many, states=["stable"], types=["classic"])] == ["stable"]


def test_no_groups(h: Harness) -> None:
    assert groups_of(h) == []
