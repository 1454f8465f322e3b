"""The leader-side incremental cooperative assignor (KIP-415) beyond the KIP's five worked
scenarios (those are fixtures: ``test_scenario_fixtures.py``)."""

from __future__ import annotations

from fakebroker.connect.assignor import DEFAULT_MAX_DELAY_MS, IncrementalCooperativeAssignor, round_robin

from .test_scenario_fixtures import notation, units

ALL = ["AC0", "AT1", "AT2", "BC0", "BT1"]


def run(a: IncrementalCooperativeAssignor, now: int, configured: list[str],
        joins: dict[str, list[str]]) -> dict[str, tuple[list[str], list[str], int]]:
    out = a.assign(now, units(configured), {m: units(us) for m, us in joins.items()})
    return {m: (notation(x.assigned), notation(x.revoked), x.delay_ms) for m, x in out.items()}


def test_defaults() -> None:
    assert IncrementalCooperativeAssignor().max_delay_ms == DEFAULT_MAX_DELAY_MS == 300_000


def test_deleted_connector_is_revoked_at_once() -> None:
    a = IncrementalCooperativeAssignor()
    run(a, 0, ALL, {"W1": []})
    got = run(a, 1, ["AC0", "AT1", "AT2"], {"W1": ALL})
    assert got == {"W1": (["AC0", "AT1", "AT2"], ["BC0", "BT1"], 0)}


def test_work_reported_twice_stays_with_the_first_member() -> None:
    a = IncrementalCooperativeAssignor()
    got = run(a, 0, ALL, {"W1": ["AC0"], "W2": ["AC0"]})
    assert got["W1"][0][:1] == ["AC0"] and "AC0" in got["W2"][1]


def test_no_delay_configured_deals_lost_work_at_once() -> None:
    a = IncrementalCooperativeAssignor(max_delay_ms=0)
    a.previous = {"W1": units(["AC0", "AT1"]), "W2": units(["AT2", "BC0", "BT1"])}
    got = run(a, 0, ALL, {"W1": ["AC0", "AT1"]})
    assert got == {"W1": (ALL, [], 0)}


def test_revokes_again_in_the_round_after_a_revoking_round() -> None:
    """KAFKA-12495: W3 joins in the follow-up of the round that revoked for W2; W1 still
    holds more than its share, so it is revoked again at once, and W3 gets work next."""
    a = IncrementalCooperativeAssignor()
    run(a, 0, ALL, {"W1": []})
    first = run(a, 1, ALL, {"W1": ALL, "W2": []})
    kept = first["W1"][0]
    second = run(a, 2, ALL, {"W1": kept, "W2": [], "W3": []})
    assert second["W1"][1], second  # revoked again: three members, W1 above its share
    third = run(a, 3, ALL, {m: second[m][0] for m in second})
    assert third["W3"][0] and not any(r for _, r, _ in third.values())
    assert sorted(len(x) for x, _, _ in third.values()) in ([1, 2, 2], [2, 2, 1])


def test_work_missing_while_nobody_left_is_dealt_at_once() -> None:
    """KAFKA-9848: W2 missed the assignment that gave it BC0 and BT1 and rejoins reporting
    nothing, with every member still there: no delay, the work is dealt again at once."""
    a = IncrementalCooperativeAssignor()
    run(a, 0, ALL, {"W1": []})
    first = run(a, 1, ALL, {"W1": ALL, "W2": []})
    run(a, 2, ALL, {"W1": first["W1"][0], "W2": []})  # W2's share: it never arrives
    got = run(a, 3, ALL, {"W1": first["W1"][0], "W2": []})
    assert {d for _, _, d in got.values()} == {0}
    assert sorted(u for x, _, _ in got.values() for u in x) == sorted(ALL)


def test_new_work_goes_to_the_least_loaded_tasks_first() -> None:
    a = IncrementalCooperativeAssignor()
    run(a, 0, ALL, {"W1": []})
    run(a, 1, ALL, {"W1": ALL, "W2": []})
    run(a, 2, ALL, {"W1": ["AC0", "AT1", "AT2"], "W2": []})
    got = run(a, 3, ALL + ["CC0", "CT1"], {"W1": ["AC0", "AT1", "AT2"], "W2": ["BC0", "BT1"]})
    # CT1 (tasks first) to W2 (2 units < 3), then CC0 to the tie's smaller id, W1.
    assert got == {"W1": (["AC0", "AT1", "AT2", "CC0"], [], 0),
                   "W2": (["BC0", "BT1", "CT1"], [], 0)}


def test_a_delay_is_never_extended_by_a_second_loss() -> None:
    a = IncrementalCooperativeAssignor(max_delay_ms=1000)
    a.previous = {"W1": units(["AC0"]), "W2": units(["AT1"]), "W3": units(["AT2"])}
    assert run(a, 0, ["AC0", "AT1", "AT2"], {"W1": ["AC0"], "W2": ["AT1"]})["W1"][2] == 1000
    got = run(a, 400, ["AC0", "AT1", "AT2"], {"W1": ["AC0"]})
    assert got == {"W1": (["AC0"], [], 600)}
    got = run(a, 1000, ["AC0", "AT1", "AT2"], {"W1": ["AC0"]})
    assert got == {"W1": (["AC0", "AT1", "AT2"], [], 0)}


def test_round_robin_deals_units_in_natural_order_over_members_by_id() -> None:
    share = round_robin(units(["BT1", "AC0", "AT2", "BC0", "AT1"]), ["w2", "w1"])
    assert {m: notation(us) for m, us in share.items()} == {"w1": ["AC0", "AT2", "BT1"], "w2": ["AT1", "BC0"]}
    assert round_robin(units(ALL), ["w1"])["w1"] == set(units(ALL))
