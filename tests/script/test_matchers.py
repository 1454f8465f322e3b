"""The matcher language, pure: compare (with captures), play (substitution), paths."""

from __future__ import annotations

import pytest

from fakebroker.intercept.matchers import (Unbound, compare, get_path, matcher_problems, parse_path,
                                        play, set_path, spec_path_problem, values_at, wildcard)

from .helpers import REG

JOIN = {"ErrorCode": 0, "MemberId": "w1-abc", "Leader": "w1-abc", "ThrottleTimeMs": 0,
        "Members": [{"MemberId": "w1-abc", "Metadata": "00"}, {"MemberId": "w2-def", "Metadata": "01"}]}


def test_literal_comparison_reports_the_first_field_that_differs() -> None:
    assert compare(JOIN, JOIN, {}, {}) is None
    d = compare(JOIN, {**JOIN, "Leader": "w2-def"}, {}, {})
    assert d is not None and (d.path, d.expected, d.actual, d.reason) == ("Leader", "w1-abc", "w2-def", "values differ")
    assert str(d) == 'Leader: values differ: expected "w1-abc", got "w2-def"'
    d = compare(JOIN, {**JOIN, "Members": JOIN["Members"][:1]}, {}, {})
    assert d is not None and (d.path, d.reason) == ("Members", "array length differs")
    d = compare(JOIN, {k: v for k, v in JOIN.items() if k != "Leader"}, {}, {})
    assert d is not None and (d.path, d.reason) == ("Leader", "field missing")
    d = compare({"A": True}, {"A": 1}, {}, {})  # JSON true is not 1
    assert d is not None and d.reason == "values differ"


def test_capture_binds_on_first_sight_then_requires_the_same_value() -> None:
    match = {"MemberId": {"capture": "me", "pattern": "^w1-"}, "Leader": {"ref": "me"},
             "Members[*].MemberId": {"pattern": "^w[12]-"}, "ThrottleTimeMs": {"min": 0}}
    b: dict[str, object] = {}
    actual = {**JOIN, "MemberId": "w1-xyz", "Leader": "w1-xyz", "ThrottleTimeMs": 7,
              "Members": [{"MemberId": "w1-xyz", "Metadata": "00"}, {"MemberId": "w2-q", "Metadata": "01"}]}
    assert compare(JOIN, actual, match, b) is None and b == {"me": "w1-xyz"}
    d = compare(JOIN, {**actual, "Leader": "w2-q"}, match, dict(b))
    assert d is not None and d.path == "Leader" and d.reason == "not the value captured as 'me'"
    assert str(d.expected) == '"w1-xyz" (captured as me)'
    d = compare(JOIN, {**actual, "MemberId": "x-1"}, match, {})
    assert d is not None and d.reason == "does not match /^w1-/"
    d = compare(JOIN, {**actual, "ThrottleTimeMs": -1}, match, {})
    assert d is not None and d.reason == "below 0"
    # Seen again later: the captured value must recur.
    d = compare(JOIN, {**actual, "MemberId": "w1-other"}, match, {"me": "w1-xyz"})
    assert d is not None and d.reason == "not the value captured earlier as 'me'"


def test_a_failed_comparison_binds_nothing_inside_an_unordered_array() -> None:
    exp = {"Groups": [{"GroupId": "a", "State": "Stable"}, {"GroupId": "b", "State": "Empty"}]}
    act = {"Groups": [{"GroupId": "b", "State": "Empty"}, {"GroupId": "a", "State": "Stable"}]}
    assert compare(exp, act, {}, {}) is not None
    assert compare(exp, act, {"Groups": {"unordered": True}}, {}) is None
    more = {"Groups": act["Groups"] + [{"GroupId": "c", "State": "Dead"}]}
    assert compare(exp, more, {"Groups": {"unordered": True}}, {}) is not None
    assert compare(exp, more, {"Groups": {"contains": True}}, {}) is None
    d = compare(exp, {"Groups": [act["Groups"][0]]}, {"Groups": {"contains": True}}, {})
    assert d is not None and d.reason == "array length differs"
    b: dict[str, object] = {}
    m = {"Groups": {"unordered": True}, "Groups[*].GroupId": {"capture": "g"}}
    # Element 0 of actual would bind g="b" then fail on State; the binding must not leak.
    assert compare({"Groups": [{"GroupId": "a", "State": "Stable"}]},
                   {"Groups": [{"GroupId": "b", "State": "Empty"}]}, m, b) is not None
    assert b == {}


def test_format_fills_a_template_with_bound_values() -> None:
    m = {"ErrorMessage": {"format": "Group {group.g1} not found."}}
    assert compare({"ErrorMessage": "x"}, {"ErrorMessage": "Group g-7 not found."}, m, {"group.g1": "g-7"}) is None
    d = compare({"ErrorMessage": "x"}, {"ErrorMessage": "Group g not found."}, m, {"group.g1": "g-7"})
    assert d is not None and d.reason == "not 'Group g-7 not found.'"
    d = compare({"ErrorMessage": "x"}, {"ErrorMessage": "y"}, m, {})
    assert d is not None and d.reason == "'group.g1' was never captured"


def test_play_substitutes_refs_and_binds_captures() -> None:
    b = {"m1": "w1-real"}
    sent = play({"GroupId": "g", "MemberId": "w1-recorded", "Tags": ["t"]},
                {"MemberId": {"ref": "m1"}, "GroupId": {"format": "{run}-g"}}, {**b, "run": "r9"})
    assert sent == {"GroupId": "r9-g", "MemberId": "w1-real", "Tags": ["t"]}
    b2: dict[str, object] = {}
    assert play({"MemberId": "w1-x"}, {"MemberId": {"capture": "m"}}, b2) == {"MemberId": "w1-x"}
    assert b2 == {"m": "w1-x"}
    with pytest.raises(Unbound):
        play({"MemberId": "x"}, {"MemberId": {"ref": "nobody"}}, {})


def test_paths() -> None:
    assert parse_path("A.B[0].C[*]") == ["A", "B", 0, "C", "*"]
    assert wildcard("Members[3].Tasks[0]") == "Members[*].Tasks[*]"
    assert get_path(JOIN, "Members[1].MemberId") == "w2-def"
    with pytest.raises(KeyError):
        get_path(JOIN, "Members[5]")
    with pytest.raises(ValueError, match="malformed"):
        parse_path("A..B")
    assert values_at(JOIN, "Members[*].MemberId") == ["w1-abc", "w2-def"]
    doc = {"A": [{"B": 1}, {"B": 2}]}
    assert set_path(doc, "A[*].B", 9) == 2 and doc == {"A": [{"B": 9}, {"B": 9}]}
    spec = REG["JoinGroupRequest"].spec.struct
    assert spec_path_problem(spec, "Protocols[*].Name") is None
    assert "no field 'Nam'" in (spec_path_problem(spec, "Protocols[0].Nam") or "")
    assert "not an array" in (spec_path_problem(spec, "GroupId[0]") or "")


@pytest.mark.parametrize(("m", "problem"), [
    ({}, "non-empty"), ({"anything": 1}, "unknown matcher key"), ({"any": True, "ref": "x"}, "no other keys"),
    ({"unordered": True, "contains": True}, "exclude each other"), ({"pattern": "("}, "not a regular expression"),
    ({"min": 3, "max": 1}, "min exceeds max"), ({"ref": "a", "capture": "a"}, "exclude each other"),
    ({"unordered": True, "min": 1}, "no scalar keys"),
])
def test_invalid_matchers(m: dict[str, object], problem: str) -> None:
    assert any(problem in p for p in matcher_problems(m))


def test_each_constrains_every_actual_element() -> None:
    m = {"Groups": {"contains": True, "each": {"GroupState": {"pattern": "^(?i:stable)$"}}}}
    exp = {"Groups": [{"GroupId": "a", "GroupState": "Stable"}]}
    ok = {"Groups": [{"GroupId": "z", "GroupState": "Stable"}, {"GroupId": "a", "GroupState": "Stable"}]}
    assert compare(exp, ok, m, {}) is None
    bad = {"Groups": ok["Groups"] + [{"GroupId": "q", "GroupState": "Empty"}]}
    d = compare(exp, bad, m, {})
    assert d is not None and d.path == "Groups[2].GroupState" and d.actual == "Empty"
    assert compare({"Groups": []}, {"Groups": []}, m, {}) is None
    assert matcher_problems({"each": {}}) == ["'each' needs 'unordered' or 'contains'"]


def test_unordered_elements_keep_their_own_matchers() -> None:
    m = {"Members": {"unordered": True}, "Members[0].MemberId": {"ref": "a"}, "Members[1].MemberId": {"ref": "b"}}
    exp = {"Members": [{"MemberId": "x"}, {"MemberId": "y"}]}
    act = {"Members": [{"MemberId": "B"}, {"MemberId": "A"}]}
    assert compare(exp, act, m, {"a": "A", "b": "B"}) is None
    assert compare(exp, act, m, {"a": "A", "b": "C"}) is not None


def test_compare_all_reports_every_difference_and_keeps_unpinned_ones_apart() -> None:
    from fakebroker.intercept.matchers import compare_all
    match = {"Leader": {"unpinned": True}, "ThrottleTimeMs": {"min": 0}}
    actual = {**JOIN, "ErrorCode": 22, "Leader": "w2-def", "MemberId": "w9"}
    failures, notes = compare_all(JOIN, actual, match, {})
    assert [(d.path, d.expected, d.actual) for d in failures] == [("ErrorCode", 0, 22), ("MemberId", "w1-abc", "w9")]
    assert [(d.path, d.expected, d.actual, d.pinned) for d in notes] == [("Leader", "w1-abc", "w2-def", False)]
    # an unpinned field may be missing or shaped otherwise: still only a note
    failures, notes = compare_all(JOIN, {k: v for k, v in JOIN.items() if k != "Leader"}, match, {})
    assert failures == [] and [(d.path, d.reason) for d in notes] == [("Leader", "field missing")]
    # compare is the first pinned difference
    d = compare(JOIN, actual, match, {})
    assert d is not None and d.path == "ErrorCode"


def test_unpinned_fields_inside_an_unordered_array_do_not_stop_a_match() -> None:
    from fakebroker.intercept.matchers import compare_all
    body = {"Members": [{"MemberId": "a", "ClientHost": "/127.0.0.1"}, {"MemberId": "b", "ClientHost": "/127.0.0.1"}]}
    match = {"Members": {"unordered": True}, "Members[*].ClientHost": {"unpinned": True}}
    actual = {"Members": [{"MemberId": "b", "ClientHost": "127.0.0.1:5"}, {"MemberId": "a", "ClientHost": "127.0.0.1:6"}]}
    failures, notes = compare_all(body, actual, match, {})
    assert failures == [] and sorted(d.actual for d in notes) == ["127.0.0.1:5", "127.0.0.1:6"]


def test_an_unordered_miss_names_the_field_of_the_closest_element() -> None:
    from fakebroker.intercept.matchers import compare_all
    body = {"Members": [{"MemberId": "a", "ErrorCode": 0}, {"MemberId": "b", "ErrorCode": 0}]}
    actual = {"Members": [{"MemberId": "b", "ErrorCode": 0}, {"MemberId": "a", "ErrorCode": 82}]}
    failures, _ = compare_all(body, actual, {"Members": {"unordered": True}}, {})
    [d] = failures
    assert (d.path, d.expected, d.actual) == ("Members[0].ErrorCode", 0, 82)
    assert d.reason == "no element matches (order ignored); the closest, Members[1], differs here: values differ"


def test_plus_is_the_bound_number_plus_the_recorded_difference_both_ways() -> None:
    match = {"GenerationId": {"ref": "generation.g1", "plus": 1}}
    assert compare({"GenerationId": 2}, {"GenerationId": 1}, match, {"generation.g1": 0}) is None
    d = compare({"GenerationId": 2}, {"GenerationId": 2}, match, {"generation.g1": 0})
    assert d is not None and d.reason == "not the value captured as 'generation.g1' +1"
    assert str(d.expected) == "1 (captured as generation.g1 +1)"
    assert play({"GenerationId": 2}, match, {"generation.g1": 0}) == {"GenerationId": 1}
    assert matcher_problems({"plus": 1}) == ["'plus' is an integer added to a 'ref'"]
    assert matcher_problems({"ref": "g", "plus": True}) == ["'plus' is an integer added to a 'ref'"]
    assert matcher_problems({"unpinned": False}) == ["'unpinned' is true or absent"]


def test_a_miss_in_nested_unordered_arrays_names_the_innermost_place_once() -> None:
    from fakebroker.intercept.matchers import compare_all
    body = {"Topics": [{"Name": "t", "Partitions": [{"PartitionIndex": 0, "ErrorCode": 0}]}]}
    actual = {"Topics": [{"Name": "t", "Partitions": [{"PartitionIndex": 0, "ErrorCode": 12}]}]}
    match = {"Topics": {"unordered": True}, "Topics[*].Partitions": {"unordered": True}}
    [d], _ = compare_all(body, actual, match, {})
    assert (d.path, d.reason) == ("Topics[0].Partitions[0].ErrorCode", "no element matches (order ignored); "
                                  "the closest, Topics[0].Partitions[0], differs here: values differ")
