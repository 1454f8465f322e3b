"""Kafka's server-side assignors, on generic units."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from fakebroker.coordinator.reconcile import (AssignmentSpec, RangeAssignor, TopicPartition,
                                              UniformAssignor, topic_catalog)
from fakebroker.coordinator.reconcile.assignors import AssignorMember


def member(mid: str, subs=("t1", "t2"), current=frozenset(), instance=None) -> AssignorMember:
    return AssignorMember(mid, instance, frozenset(subs), frozenset(current))


def spec(members, topics) -> AssignmentSpec:
    return AssignmentSpec(tuple(sorted(members, key=lambda m: m.member_id)), topic_catalog(topics))


def tps(topic: str, *ps: int) -> set[TopicPartition]:
    return {TopicPartition(topic, p) for p in ps}


def test_range_co_partitions() -> None:
    """RangeAssignor's javadoc example: M0 gets T1P0, T1P1, T2P0, T2P1; M1 T1P2, T2P2."""
    out = RangeAssignor().assign(spec([member("M0"), member("M1")],
                                      {"t1": ("T1", 3), "t2": ("T2", 3)}))
    assert out["M0"] == tps("T1", 0, 1) | tps("T2", 0, 1)
    assert out["M1"] == tps("T1", 2) | tps("T2", 2)


def test_range_orders_static_members_first_by_instance_id() -> None:
    members = [member("a", instance="I1"), member("b", instance="I0"), member("0-dynamic")]
    out = RangeAssignor().assign(spec(members, {"t1": ("T1", 3), "t2": ("T2", 3)}))
    assert out["b"] == tps("T1", 0) | tps("T2", 0)      # I0 first
    assert out["a"] == tps("T1", 1) | tps("T2", 1)
    assert out["0-dynamic"] == tps("T1", 2) | tps("T2", 2)


def test_range_heterogeneous_subscriptions() -> None:
    out = RangeAssignor().assign(spec([member("A", ("t1",)), member("B", ("t1", "t2"))],
                                      {"t1": ("T1", 4), "t2": ("T2", 2)}))
    assert out["A"] == tps("T1", 0, 1)
    assert out["B"] == tps("T1", 2, 3) | tps("T2", 0, 1)


def test_uniform_homogeneous_is_sticky_within_quota() -> None:
    old = {"A": tps("T1", 0, 1, 2), "B": tps("T1", 3, 4, 5)}
    members = [member("A", ("t1",), old["A"]), member("B", ("t1",), old["B"]),
               member("C", ("t1",))]
    out = UniformAssignor().assign(spec(members, {"t1": ("T1", 6)}))
    assert [len(out[m]) for m in "ABC"] == [2, 2, 2]
    assert out["A"] <= old["A"] and out["B"] <= old["B"]


def test_uniform_hands_back_the_set_of_a_member_that_keeps_it() -> None:
    """A member keeping exactly its units gets its own set object back (no copy per
    member); one over its quota, or given more, gets a new set."""
    members = [member("A", ("t1",), tps("T1", 0, 1)), member("B", ("t1",), tps("T1", 2, 3, 4)),
               member("C", ("t1",), tps("T1", 5))]
    out = UniformAssignor().assign(spec(members, {"t1": ("T1", 6)}))
    assert out == {"A": tps("T1", 0, 1), "B": tps("T1", 2, 3), "C": tps("T1", 4, 5)}
    assert out["A"] is members[0].current
    assert out["B"] is not members[1].current and out["C"] is not members[2].current


def test_uniform_gives_extra_units_to_the_first_members() -> None:
    out = UniformAssignor().assign(spec([member("A", ("t1",)), member("B", ("t1",))],
                                        {"t1": ("T1", 5)}))
    assert (len(out["A"]), len(out["B"])) == (3, 2)


def test_assignors_with_no_members_or_units() -> None:
    for assignor in (RangeAssignor(), UniformAssignor()):
        assert assignor.assign(spec([], {"t1": ("T1", 3)})) == {}
        assert assignor.assign(spec([member("A")], {})) == {"A": frozenset()}


SUBS = st.sampled_from([("t1",), ("t2",), ("t1", "t2")])


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(SUBS, min_size=1, max_size=6), st.integers(0, 9), st.integers(0, 9),
       st.randoms(use_true_random=False))
def test_uniform_and_range_assign_each_unit_once(subs, n1, n2, rnd) -> None:
    topics = {"t1": ("T1", n1), "t2": ("T2", n2)}
    catalog = topic_catalog(topics)
    everything = [u for us in catalog.values() for u in us]
    members = []
    for i, s in enumerate(subs):
        mine = [u for u in everything if u.topic_id == ("T1" if "t1" in s else "T2")]
        members.append(member(f"m{i}", s, frozenset(rnd.sample(mine, min(len(mine), 2)))))
    for assignor in (UniformAssignor(), RangeAssignor()):
        out = assignor.assign(spec(members, topics))
        seen = [u for us in out.values() for u in us]
        assert len(seen) == len(set(seen))
        subscribed = {u for m in members for k in m.subscription for u in catalog[k]}
        assert set(seen) == subscribed
        for m in members:
            assert all(any(u in catalog[k] for k in m.subscription) for u in out[m.member_id])
    # Uniform, homogeneous: sizes differ by at most one.
    if len(set(subs)) == 1:
        sizes = [len(v) for v in UniformAssignor().assign(spec(members, topics)).values()]
        assert max(sizes) - min(sizes) <= 1
