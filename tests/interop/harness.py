"""The generic half of the interop tests: which cases exist and what each checks.

An *adapter* (``kafka_python_adapter``, ``kio_adapter``) knows one other library: how
to find its class for a message at a version, how to encode and decode with it, how to
convert objects between its model and ours (walking our spec and its schema model side
by side, never per API), and how to draw messages *in its own model* from its own
schema description. This module turns that into test cases:

* direction ``theirs->ours``: draw a message with their library, encode with theirs,
  decode with ours, re-encode with ours -> identical bytes, and the decoded object
  equals their message converted to ours;
* direction ``ours->theirs``: draw a message with ours (tests/support/strategies.py),
  encode with ours, decode with theirs, re-encode with theirs -> identical bytes, and
  their decoded object converted back equals ours.

Each (API, request/response, version, direction) runs under the three drawing
profiles (RANDOM, MINIMAL: every nullable null / tagged unset / array empty,
MAXIMAL: every nullable set / tagged set / unicode strings / large arrays).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakebroker.protocol import default_registry
from fakebroker.protocol.registry import MessageType
from fakebroker.protocol.spec import FieldSpec, StructSpec
from tests.support.strategies import (
    MAXIMAL,
    MINIMAL,
    RANDOM,
    Overrides,
    Profile,
    all_versions,
    key_versions,
    message_strategy,
)

REGISTRY = default_registry()

#: The standard Kafka APIs whose specs ship in schemas/messages, in the brief's order.
STANDARD_APIS = (
    "ApiVersions", "Metadata", "FindCoordinator", "JoinGroup", "SyncGroup", "Heartbeat",
    "LeaveGroup", "DescribeGroups", "ListGroups", "OffsetCommit", "OffsetFetch",
    "ListOffsets", "Fetch", "ConsumerGroupHeartbeat", "ConsumerGroupDescribe",
    "DescribeCluster", "Produce",
)
KINDS = ("Request", "Response")
DIRECTIONS = ("theirs->ours", "ours->theirs")

#: Hypothesis examples per case and profile.
EXAMPLES = {RANDOM: 12, MINIMAL: 2, MAXIMAL: 3}
#: Versions other than the key ones (lowest, first flexible, highest) run RANDOM only,
#: with this many examples, so every version both libraries have is exercised.
OTHER_VERSION_EXAMPLES = 4

SETTINGS = dict(deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])


class Unsupported(Exception):
    """The other library has no class for this message at this version."""


@dataclass(frozen=True)
class Known:
    """A documented disagreement: where the other library differs from Kafka 4.2.0."""

    id: str
    library: str
    what: str  # the bug, in one sentence
    kafka: str  # what Kafka 4.2.0 does instead


class Adapter:
    """What a test needs from another library. Subclasses fill every method."""

    name = "?"
    #: Whether the library can carry unknown tagged fields through decode and encode.
    unknown_tags = False

    def their_class(self, mt: MessageType, version: int) -> Any:
        raise NotImplementedError

    def encode(self, theirs: Any, mt: MessageType, version: int) -> bytes:
        raise NotImplementedError

    def decode(self, data: bytes, mt: MessageType, version: int) -> Any:
        raise NotImplementedError

    def to_theirs(self, obj: Any, mt: MessageType, version: int) -> Any:
        raise NotImplementedError

    def from_theirs(self, theirs: Any, mt: MessageType, version: int) -> Any:
        raise NotImplementedError

    def strategy(self, mt: MessageType, version: int, profile: Profile) -> st.SearchStrategy[Any]:
        """Messages drawn in their model, from their schema description."""
        raise NotImplementedError

    def overrides(self, mt: MessageType, version: int) -> Overrides:
        """Narrowed value ranges for our strategy, each justified by a ``Known`` entry."""
        return {}


# ---------------------------------------------------------------- pairing our fields with theirs

def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def names_match(ours: str, theirs: str) -> bool:
    """Our attribute and theirs name the same field (they may drop a ``_ms`` suffix or a
    prefix, as kio and kafka-python's patches do)."""
    a, b = _norm(ours), _norm(theirs)
    return a == b or a.startswith(b) or a.endswith(b)


def present_fields(s: StructSpec, version: int) -> list[FieldSpec]:
    return [f for f in s.fields if version in f.versions]


def pair(s: StructSpec, version: int, theirs: list[Any], their_name: Any, where: str) -> list[tuple[FieldSpec, Any]]:
    """Our fields present at ``version`` with theirs, positionally (wire order), checked by name."""
    ours = present_fields(s, version)
    if len(ours) != len(theirs):
        raise AssertionError(
            f"{where} v{version}: field lists differ: ours {[f.name for f in ours]} "
            f"theirs {[their_name(t) for t in theirs]}")
    for f, t in zip(ours, theirs):
        if not names_match(f.attr, their_name(t)):
            raise AssertionError(f"{where} v{version}: field {f.name} pairs with {their_name(t)}")
    return list(zip(ours, theirs))


# ---------------------------------------------------------------- the cases

def message_types(api: str) -> list[MessageType]:
    return [REGISTRY[api + kind] for kind in KINDS]


def _profiles_for(mt: MessageType, version: int) -> list[tuple[Profile, int]]:
    if version in key_versions(mt):
        return [(p, n) for p, n in EXAMPLES.items()]
    return [(RANDOM, OTHER_VERSION_EXAMPLES)]


@dataclass
class Matrix:
    """The cases of one library, and what was left out and why (reported, never silent)."""

    adapter: Adapter
    apis: Iterable[str] = STANDARD_APIS
    skipped: dict[str, str] = field(default_factory=dict)  # "Api[Kind] vN" -> reason

    def params(self) -> list[Any]:
        out = []
        for api in self.apis:
            for mt in message_types(api):
                for version in all_versions(mt):
                    reason = None
                    try:
                        self.adapter.their_class(mt, version)
                    except Unsupported as e:
                        reason = str(e)
                        self.skipped[f"{mt.name} v{version}"] = reason
                    for direction in DIRECTIONS:
                        for profile, n in _profiles_for(mt, version):
                            marks = [pytest.mark.skip(reason=f"{self.adapter.name}: {reason}")] if reason else []
                            out.append(pytest.param(mt.name, version, direction, profile, n, marks=marks,
                                                    id=f"{mt.name}-v{version}-{direction}-{profile}"))
        return out


def run_case(adapter: Adapter, name: str, version: int, direction: str, profile: Profile,
             examples: int) -> None:
    mt = REGISTRY[name]
    if direction == "theirs->ours":
        strategy = adapter.strategy(mt, version, profile)

        @settings(max_examples=examples, **SETTINGS)
        @given(strategy)
        def run(theirs: Any) -> None:
            check_theirs_to_ours(adapter, mt, version, theirs)
    else:
        if not adapter.unknown_tags:
            profile = profile.without_unknown_tags()
        strategy = message_strategy(mt, version, profile, adapter.overrides(mt, version))

        @settings(max_examples=examples, **SETTINGS)
        @given(strategy)
        def run(ours: Any) -> None:
            check_ours_to_theirs(adapter, mt, version, ours)
    run()


def check_theirs_to_ours(adapter: Adapter, mt: MessageType, version: int, theirs: Any) -> None:
    data = adapter.encode(theirs, mt, version)
    ours = mt.decode(data, version)
    again = mt.encode(ours, version)
    assert again.hex() == data.hex(), f"{adapter.name} bytes re-encoded by ours differ"
    expected = adapter.from_theirs(theirs, mt, version)
    assert ours == expected, (f"decoded by ours != {adapter.name}'s values\n"
                              f"  ours     = {ours.to_json()}\n  expected = {expected.to_json()}")


def check_ours_to_theirs(adapter: Adapter, mt: MessageType, version: int, ours: Any) -> None:
    data = mt.encode(ours, version)
    theirs = adapter.decode(data, mt, version)
    again = adapter.encode(theirs, mt, version)
    assert again.hex() == data.hex(), f"our bytes re-encoded by {adapter.name} differ"
    back = adapter.from_theirs(theirs, mt, version)
    assert back == ours, (f"{adapter.name}'s decoded values != ours\n"
                          f"  theirs = {back.to_json()}\n  ours   = {ours.to_json()}")


def check_converter(adapter: Adapter, mt: MessageType, version: int, ours: Any) -> None:
    """ours -> theirs -> ours is the identity (the converter itself loses nothing)."""
    back = adapter.from_theirs(adapter.to_theirs(ours, mt, version), mt, version)
    assert back == ours
