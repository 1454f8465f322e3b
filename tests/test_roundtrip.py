"""Property tests: every spec of the default registry at every valid version round-trips.

For each (spec, version), under each drawing profile (see tests/support/strategies.py:
RANDOM mixes everything, MINIMAL makes every nullable field null / tagged field unset /
array empty, MAXIMAL sets them all, with unicode strings and 128+ element arrays):

* encode -> decode gives an object equal to the one drawn (unknown tagged fields included);
* decode -> encode gives back exactly the bytes that were decoded.

The cases are parametrised over (spec, version) so pytest-xdist spreads them;
each runs a modest number of hypothesis examples so the file stays well under a minute
on two cores. Specs are found at collection time: a spec file a user adds is covered
without touching this file.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from fakebroker.protocol import default_registry
from tests.support.strategies import MAXIMAL, MINIMAL, RANDOM, Profile, all_versions, message_strategy

REGISTRY = default_registry()

# Examples per (spec, version): RANDOM explores, the forced profiles pin the extremes.
EXAMPLES = {RANDOM: 20, MINIMAL: 2, MAXIMAL: 4}

CASES = [
    pytest.param(name, version, id=f"{name}-v{version}")
    for name in sorted(REGISTRY.types)
    for version in all_versions(REGISTRY[name])
]


def check_roundtrip(mt, version: int, obj) -> None:
    data = mt.encode(obj, version)
    back = mt.decode(data, version)
    assert back == obj, f"decode(encode(x)) != x\n  x    = {obj.to_json()}\n  back = {back.to_json()}"
    again = mt.encode(back, version)
    assert again == data, f"encode(decode(b)) != b\n  b     = {data.hex()}\n  again = {again.hex()}"


def run_profile(mt, version: int, profile: Profile) -> None:
    @settings(max_examples=EXAMPLES[profile], deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.filter_too_much])
    @given(message_strategy(mt, version, profile))
    def run(obj) -> None:
        check_roundtrip(mt, version, obj)

    run()


@pytest.mark.parametrize(("name", "version"), CASES)
def test_roundtrip(name: str, version: int) -> None:
    mt = REGISTRY[name]
    for profile in EXAMPLES:
        run_profile(mt, version, profile)


def test_every_spec_is_covered() -> None:
    """The matrix above is not empty and names every spec of the registry."""
    covered = {p.values[0] for p in CASES}
    assert covered == set(REGISTRY.types)
    assert len(CASES) >= len(REGISTRY.types)
