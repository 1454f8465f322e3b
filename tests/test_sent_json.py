"""``MessageType.sent_json``: the JSON form of what encoding an object at a version writes,
computed without encoding or decoding (the broker records its responses with it), must equal
decoding the bytes. An object drawn at one version is encoded at every version that accepts
it, so fields a version lacks (dropped when ignorable) and unknown tagged fields sent at a
non-flexible version are exercised."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from fakebroker.protocol import EncodeError, default_registry
from tests.support.strategies import RANDOM, key_versions, message_strategy

REGISTRY = default_registry()
CASES = [pytest.param(name, version, id=f"{name}-v{version}")
         for name in sorted(REGISTRY.types) if REGISTRY[name].spec.type == "response"
         for version in key_versions(REGISTRY[name])]
differs: set[str] = set()  # messages where sent_json removed something to_json kept


def check(name: str, drawn_at: int, obj: object) -> None:
    mt = REGISTRY[name]
    for v in range(mt.lowest, mt.highest + 1):
        try:
            data = mt.encode(obj, v)  # type: ignore[arg-type]
        except EncodeError:
            continue  # a field the version lacks holds a value it may not drop
        decoded = mt.decode(data, v).to_json()
        assert mt.sent_json(obj, v) == decoded, f"{name} drawn at v{drawn_at}, sent at v{v}"  # type: ignore[arg-type]
        if decoded != obj.to_json():  # type: ignore[attr-defined]
            differs.add(name)


@pytest.mark.parametrize(("name", "version"), CASES)
def test_sent_json_is_what_decoding_gives(name: str, version: int) -> None:
    @settings(max_examples=8, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.filter_too_much])
    @given(message_strategy(REGISTRY[name], version, RANDOM))
    def run(obj: object) -> None:
        check(name, version, obj)

    run()


def test_some_case_drops_what_the_version_lacks() -> None:
    """Not vacuous: encoding at a lower version dropped ignorable fields or unknown tags
    in some responses (JoinGroupResponse's ThrottleTimeMs at v0-1, for one)."""
    jg = REGISTRY["JoinGroupResponse"]
    obj = jg.new(throttle_time_ms=100, error_code=0, generation_id=1, protocol_name="sessioned",
                 leader="m", member_id="m", members=[])
    assert jg.sent_json(obj, 1)["ThrottleTimeMs"] == 0
    assert jg.sent_json(obj, 2)["ThrottleTimeMs"] == 100
    check("JoinGroupResponse", 5, obj)
    assert "JoinGroupResponse" in differs
