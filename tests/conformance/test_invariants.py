"""The group invariants (conformance.invariants), in plain Python, on KIP-415 rounds written
with the pipeline's transcript scripts: each clean scenario passes, each planted defect is
found by its own invariant and no other; rounds a scripted peer led are not the worker's.
(The Spark audit runs the same definitions: tests/pipeline/test_audit.py.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conformance.invariants import group, violations
from conformance.harness.invariant_results import results
from conformance.invariants.report import findings
from fakebroker.exchange.fields import exchange_fields
from conformance.harness.target import load_target
from fakebroker.exchange.synthetic import Script


def rows(s: Script) -> list[dict[str, Any]]:
    """The script's exchanges as the exchanges table's rows (ref: the transcript line)."""
    pending: dict[tuple[str, int], tuple[int, dict[str, Any]]] = {}
    out = []
    for n, line in enumerate(s.lines[1:], 2):
        key = (line["conn"], line["correlation_id"])
        if line["kind"] == "request":
            pending[key] = (n, line)
            continue
        ref, req = pending.pop(key)
        out.append({"source": "t", "source_kind": "transcript", "ref": ref, "resp_ref": n,
                    "req_vtime_ms": req["vtime_ms"], "resp_vtime_ms": line["vtime_ms"], "api": req["api"],
                    **exchange_fields(req["api"], req["body"], line["body"])})
    return out


def found(s: Script, leaders: list[str] | None = None) -> dict[str, list[tuple[int, str | None]]]:
    return {rid: [(v["ref"], v["unit"]) for v in vs] for rid, vs in violations(group(rows(s), leaders)).items() if vs}


def two_members(w1: tuple[str, ...], w2: tuple[str, ...], leader: str = "w1", revoked: tuple[str, ...] = ()) -> Script:
    """w2 joins w1 (which ran c1, c1-0..c1-2); the leader gives each what is listed."""
    s = Script()
    s.join("w1", 1, "w1", members={"w1": ()})
    s.sync("w1", 1, "w1", assigned=("c1", "c1-0", "c1-1", "c1-2"))
    s.join("w1", 2, leader, owned=("c1", "c1-0", "c1-1", "c1-2"),
           members={"w1": ("c1", "c1-0", "c1-1", "c1-2"), "w2": ()} if leader == "w1" else None)
    s.join("w2", 2, leader, members={"w1": ("c1", "c1-0", "c1-1", "c1-2"), "w2": ()} if leader == "w2" else None)
    s.sync("w1", 2, leader, revoked=revoked)
    s.sync("w2", 2, leader, assigned=w2)
    return s


def test_balanced_follow_up_holds() -> None:
    s = two_members((), (), revoked=("c1-1", "c1-2"))
    s.join("w1", 3, "w1", owned=("c1", "c1-0"), members={"w1": ("c1", "c1-0"), "w2": ()})
    s.join("w2", 3, "w1")
    s.sync("w1", 3, "w1")
    s.sync("w2", 3, "w1", assigned=("c1-1", "c1-2"))
    assert found(s) == {}


def test_settled_imbalance_is_found() -> None:
    """w2 joins and the leader keeps all four units, revoking nothing (no-revocation-on-join)."""
    s = two_members((), ())
    assert found(s) == {"CONN-INV-04": [(11, None)]}


def test_kip_example_counts_work_as_a_whole() -> None:
    """KIP-415's "worker leaves" ends with connectors 2 and 0 but work 3 and 2: balanced."""
    s = Script()
    s.join("w1", 1, "w1", members={"w1": (), "w3": ()})
    s.join("w3", 1, "w1")
    s.sync("w1", 1, "w1", assigned=("a", "a-1", "b"))
    s.sync("w3", 1, "w1", assigned=("b-1", "a-2"))
    assert found(s) == {}


def test_peer_led_rounds_are_not_judged() -> None:
    s = two_members((), (), leader="w2")
    assert found(s, leaders=["w1"]) == {}
    assert "CONN-INV-04" in found(s, leaders=["w2"])


def test_same_round_reassignment_is_found() -> None:
    s = two_members((), ("c1-2",), revoked=("c1-2",))
    assert found(s) == {"CONN-INV-02": [(13, "c1-2")]}


def test_lost_work_left_unassigned_without_delay() -> None:
    """KAFKA-15693: w2 departs, the leader announces no delay and revokes nothing, c1-1 stays
    unassigned; the fixed leader gives it out in that round."""
    def departure(fixed: bool) -> Script:
        s = Script()
        s.join("w1", 1, "w1", members={"w1": (), "w2": ()})
        s.join("w2", 1, "w1")
        s.sync("w1", 1, "w1", assigned=("c1", "c1-0"))
        s.sync("w2", 1, "w1", assigned=("c1-1",))
        s.join("w1", 2, "w1", owned=("c1", "c1-0"), members={"w1": ("c1", "c1-0")})
        s.sync("w1", 2, "w1", assigned=("c1-1",) if fixed else ())
        return s
    assert found(departure(True)) == {}
    assert found(departure(False)) == {"CONN-INV-03": [(13, "c1-1")]}


def test_endless_revocation_is_found() -> None:
    s = two_members((), (), revoked=("c1-2",))
    owned = ["c1", "c1-0", "c1-1"]
    for gen in (3, 4):
        s.join("w1", gen, "w1", owned=tuple(owned), members={"w1": tuple(owned), "w2": ()})
        s.join("w2", gen, "w1")
        s.sync("w1", gen, "w1", revoked=(owned.pop(),))
        s.sync("w2", gen, "w1")
    assert set(found(s)) == {"CONN-INV-05"}
    assert found(s)["CONN-INV-05"][0][0] == 27


def test_results_fail_with_the_case_and_the_exchange() -> None:
    target = load_target("fixtures/targets/kafka-python-worker.toml")
    bad = findings(rows(two_members((), ())), ["w1"])
    bad["CONN-INV-04"]["violations"][0]["exchange"] = "w1 SyncGroup v5 (request #6 of the case)"
    good = findings(rows(two_members((), (), revoked=("c1-1", "c1-2"))), ["w1"])
    out = {r.case_id: r for r in results([{"id": "CONN-INC-13[compatible]", "protocol": "compatible", "invariants": bad},
                                          {"id": "CONN-INC-01[compatible]", "protocol": "compatible", "invariants": good}],
                                         target)}
    r = out["CONN-INV-04[compatible]"]
    assert r.outcome.value == "FAIL" and r.message.startswith("CONN-INC-13[compatible]: settled at generation 2")
    assert "w1 SyncGroup v5 (request #6 of the case)" in r.message
    assert out["CONN-INV-01[compatible]"].outcome.value == "PASS"
    # no case at eager recorded any round: never a pass from silence
    assert out["CONN-INV-01[eager]"].outcome.value == "NOT-APPLICABLE"


def test_draft_member_heartbeats_with_its_current_epoch() -> None:
    """C848-INV-01: w1 was given epoch 2; it heartbeats with 2 (fine), then with 1 (an older
    one); w2, never given one, joins with 0 and leaves with -1 (fine)."""
    s = Script()
    s.connect_heartbeat("w1", 0, (), 2, ())
    s.connect_heartbeat("w1", 2, (), 2, None)
    s.connect_heartbeat("w2", 0, (), 3, ())
    s.connect_heartbeat("w2", -1, (), -1, None)
    assert found(s) == {}
    s.connect_heartbeat("w1", 1, (), 2, None)  # lines 10-11
    assert found(s) == {"C848-INV-01": [(11, None)]}
    assert found(s, leaders=["w2"]) == {}  # w1 is not judged here


def test_a_compute_assignment_answer_gives_the_member_its_epoch() -> None:
    """C848-INV-01: the selected worker's COMPUTE_ASSIGNMENT answer carries its new epoch (its
    other fields valid, ERRATA 17); heartbeating with it next is no violation (a chaos
    campaign on the draft reference worker reported one: the grant was not counted)."""
    s = Script()
    s.connect_heartbeat("w1", 0, (), 3, ())
    s.connect_heartbeat("w1", 3, (), 5, None, error=1000)
    s.connect_heartbeat("w1", 5, (), 6, None)
    assert found(s) == {}
    s.connect_heartbeat("w1", 5, (), 6, None)  # lines 8-9: an epoch older than the 6 it was given
    assert found(s) == {"C848-INV-01": [(9, None)]}


def test_results_are_written_as_allure_results(tmp_path: Path) -> None:
    """The invariants have no test of their own: each result is written into the Allure
    results as a case's would be, under its own id, its status the outcome's."""
    from conformance.reports.allure_support import write_invariant_results
    target = load_target("fixtures/targets/kafka-python-worker.toml")
    bad = findings(rows(two_members((), ())), ["w1"])
    out = results([{"id": "CONN-INC-13[compatible]", "protocol": "compatible", "invariants": bad}], target)
    write_invariant_results(tmp_path, out, target)
    written = [json.loads(p.read_text()) for p in tmp_path.glob("*-result.json")]
    docs = {next(la["value"] for la in d["labels"] if la["name"] == "as_id"): d for d in written}
    assert set(docs) == {r.case_id for r in out}
    failed = docs["CONN-INV-04[compatible]"]
    assert failed["status"] == "failed" and "CONN-INC-13[compatible]: settled at generation 2" in failed["statusDetails"]["message"]
    assert {"name": "story", "value": "CONN-INV-04"} in failed["labels"]
    (att,) = failed["attachments"]
    assert json.loads((tmp_path / att["source"]).read_text())["outcome"] == "FAIL"
    assert docs["CONN-INV-01[eager]"]["status"] == "skipped"  # NOT-APPLICABLE: no round at eager
