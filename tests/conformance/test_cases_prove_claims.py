"""Coordinator cases conclude from what they saw, never from silence: a coordinator that
holds an answer a while, within the target's timing, is no failure, and one that does
what the requirement forbids (or misreports what it must report) is caught with the
evidence named."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from fakebroker.intercept.hooks import Delay, ErrorResponse

from conformance.catalogue.requirements import default_catalogue
from conformance import suites
from conformance.harness.cases import load_cases
from conformance.harness.outcomes import CaseResult, Outcome
from conformance.harness.runner import run_case
from conformance.harness.sessions import CoordinatorSession
from conformance.harness.target import load_target

load_cases(suites)  # run_case finds each live case in the registry the suites fill

TARGET = Path(__file__).resolve().parents[2] / "fixtures" / "targets" / "fakebroker.toml"


@pytest.fixture
def run() -> Iterator[Callable[..., CaseResult]]:
    """Run one coordinator case on a fresh builtin fake broker, hooks installed first."""
    sessions: list[CoordinatorSession] = []

    def go(case_id: str, *hooks: tuple[Any, ...]) -> CaseResult:
        """Each hook: (fn, API) on the request side, or (fn, API, side)."""
        session = CoordinatorSession.start(load_target(TARGET))
        sessions.append(session)
        assert session.broker is not None
        for fn, api, *side in hooks:
            session.broker.broker.hooks.add(fn, api=api, side=side[0] if side else "request", keep=True)
        return run_case(default_catalogue()[case_id], session)
    yield go
    for s in sessions:
        s.stop()


def _rejoins_of_known_members(action: Callable[[], Any]) -> Callable[[Any], Any]:
    """A hook acting on a JoinGroup that names a member id and no protocol change: a
    member's rejoin (the first JoinGroups of a member name none, or the id just handed out)."""
    seen: set[str] = set()

    def hook(call: Any) -> Any:
        mid = call.request.member_id
        if not mid:
            return None
        if mid not in seen:  # the join right after MEMBER_ID_REQUIRED
            seen.add(mid)
            return None
        return action()
    return hook


def test_a_follower_answered_after_3_s_with_the_current_generation_passes_cls_join_15(run: Any) -> None:
    result = run("CLS-JOIN-15", (_rejoins_of_known_members(lambda: Delay(3000)), "JoinGroup"))
    assert result.outcome is Outcome.PASS, result.message


def test_a_rebalance_seen_fails_cls_join_15_with_the_evidence(run: Any) -> None:
    """The follower's rejoin is held, and the leader's heartbeat says a rebalance started: the
    requirement is not met (a SHOULD since the catalogue audit: Apache Kafka's behaviour, which
    no KIP states), so NON-STRICT, with the evidence."""
    result = run("CLS-JOIN-15", (_rejoins_of_known_members(lambda: Delay(3000)), "JoinGroup"),
                 (lambda call: ErrorResponse("REBALANCE_IN_PROGRESS"), "Heartbeat"))
    assert default_catalogue()["CLS-JOIN-15"].level == "SHOULD"
    assert result.outcome is Outcome.NON_STRICT
    assert "a rebalance started" in result.message and "REBALANCE_IN_PROGRESS" in result.message


def _described(edit: Callable[[Any], None]) -> tuple[Callable[[Any], None], str, str]:
    """A response-side hook applying ``edit`` to every member DescribeGroups reports."""
    def hook(call: Any) -> None:
        for group in call.response.groups:
            for member in group.members:
                edit(member)
    return hook, "DescribeGroups", "response"


def test_instance_ids_reported_at_v4_pass_cls_desc_06(run: Any) -> None:
    result = run("CLS-DESC-06")
    assert result.outcome is Outcome.PASS, result.message
    sent = [e.version for e in result.transcript.requests() if e.api == "DescribeGroups"]
    assert sent and all(v is not None and v >= 4 for v in sent), sent  # the field exists from v4


@pytest.mark.parametrize("edit, member, reported", [
    (lambda m: setattr(m, "group_instance_id", None), "static", "None"),  # the instance id dropped
    (lambda m: setattr(m, "group_instance_id", m.group_instance_id or m.member_id), "other", "other-"),
], ids=["static-member-without-its-id", "dynamic-member-with-one"])
def test_a_misreported_instance_id_fails_cls_desc_06(run: Any, edit: Callable[[Any], None], member: str,
                                                     reported: str) -> None:
    result = run("CLS-DESC-06", _described(edit))
    assert result.outcome is Outcome.FAIL, result.message
    assert f"{member}'s GroupInstanceId in DescribeGroups v" in result.message and reported in result.message
