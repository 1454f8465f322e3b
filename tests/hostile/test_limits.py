"""The parsing limits themselves: what is just inside is accepted, what is past is refused."""

from __future__ import annotations

import json
import time

import pytest

from fakebroker.parse_guard import MAX_DEPTH, InputLimit, loads_json
from fakebroker.protocol import default_registry
from fakebroker.script.documents import MAX_YAML_VALUES, DocumentError, parse_document
from fakebroker.script.faults import parse_plan

REG = default_registry()


def test_nesting_up_to_the_limit_is_accepted_and_one_more_is_refused() -> None:
    assert loads_json("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    with pytest.raises(InputLimit, match="nesting-too-deep"):
        loads_json("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    with pytest.raises(DocumentError, match="nesting-too-deep"):
        parse_document("x: " + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "p.yaml")


def test_integers_past_python_s_limit_are_refused_by_name() -> None:
    assert loads_json("1" + "0" * 4000) == 10 ** 4000
    with pytest.raises(InputLimit, match="integer-too-long"):
        loads_json("1" + "0" * 4300)


def test_nan_and_infinity_are_not_json() -> None:
    with pytest.raises(InputLimit, match="json-non-finite"):
        loads_json('{"min": NaN}')
    assert json.loads('{"min": NaN}')  # what the standard library would have let through


def test_a_plan_may_use_aliases_within_the_bound() -> None:
    plan = parse_plan("version: 1\nfaults:\n  - &hb {api: Heartbeat, action: {drop: true}}\n"
                      "  - *hb\n", REG)
    assert len(plan.faults) == 2 and plan.faults[0].action.drop and plan.faults[1].action.drop


def test_alias_expansion_is_counted_without_expanding() -> None:
    # 9 levels of 10 references: 10**9 values, refused before anything walks them.
    text = "a: &a [1]\n" + "".join(f"{b}: &{b} [{', '.join(['*' + a] * 10)}]\n"
                                    for a, b in zip("abcdefghi", "bcdefghij"))
    started = time.monotonic()
    with pytest.raises(DocumentError, match="alias-expansion") as info:
        parse_document(text, "bomb.yaml")
    assert time.monotonic() - started < 2
    assert f"more than {MAX_YAML_VALUES} values" in str(info.value)
