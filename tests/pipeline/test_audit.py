"""Each invariant against a clean transcript and one that breaks it, all ingested and
audited by Spark in one pass (the session is shared; Spark work is what costs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fakebroker.exchange.synthetic import Script


def incremental(plant: str | None = None) -> Script:
    """KIP-415: w2 joins a group where w1 runs c1, c1-0, c1-1; c1-1 moves to w2 in two rounds."""
    s = Script()
    s.join("w1", 1, "w1", members={"w1": ()})
    s.sync("w1", 1, "w1", assigned=("c1", "c1-0", "c1-1"))
    s.join("w1", 2, "w1", owned=("c1", "c1-0", "c1-1"), members={"w1": ("c1", "c1-0", "c1-1"), "w2": ()})
    s.join("w2", 2, "w1")
    if plant == "revocation-skipped":
        s.sync("w1", 2, "w1")
        s.sync("w2", 2, "w1", assigned=("c1-1",))  # line 13
        return s
    if plant == "same-round":
        s.sync("w1", 2, "w1", revoked=("c1-1",))
        s.sync("w2", 2, "w1", assigned=("c1-1",))  # line 13
        return s
    s.sync("w1", 2, "w1", revoked=("c1-1",))
    s.sync("w2", 2, "w1")
    s.join("w1", 3, "w1", owned=("c1", "c1-0"))
    s.join("w2", 3, "w1")
    s.sync("w1", 3, "w1")
    s.sync("w2", 3, "w1", assigned=("c1-1",))
    if plant == "stale-accepted":
        s.heartbeat("w2", 2, error=0)  # line 22
    else:
        s.heartbeat("w2", 2, error=22)
        s.heartbeat("w2", 3)
    if plant == "generation-backwards":
        s.join("w1", 2, "w1", owned=("c1", "c1-0"))  # line 24
    if plant == "session-expired":
        s.wait(15000)
        s.heartbeat("w1", 3, error=0)  # line 24
    elif plant is None:
        s.wait(2000)
        s.heartbeat("w1", 3)
    return s


def eager(double: bool) -> Script:
    s = Script(protocol="default", version=0)
    s.join("w1", 1, "w1", members={"w1": (), "w2": ()})
    s.join("w2", 1, "w1")
    s.sync("w1", 1, "w1", assigned=("c1", "c1-0"))
    s.sync("w2", 1, "w1", assigned=("c1-0",) if double else ("c1-1",))  # line 9
    return s


def delayed(early: bool) -> Script:
    """w2 leaves; the leader announces a 5 s delay; w2's work goes to w1 only after it."""
    s = Script()
    s.join("w1", 1, "w1", members={"w1": (), "w2": ()})
    s.join("w2", 1, "w1")
    s.sync("w1", 1, "w1", assigned=("c1", "c1-0"))
    s.sync("w2", 1, "w1", assigned=("c1-1",))
    s.join("w1", 2, "w1", owned=("c1", "c1-0"), members={"w1": ("c1", "c1-0")})
    s.sync("w1", 2, "w1", delay_ms=5000)
    s.wait(1000 if early else 6000)
    s.join("w1", 3, "w1", owned=("c1", "c1-0"), members={"w1": ("c1", "c1-0")})
    s.sync("w1", 3, "w1", assigned=("c1-1",))  # line 17
    return s


def draft(skip_ack: bool) -> Script:
    s = Script()
    s.connect_heartbeat("w1", 0, (), 1, ("c1", "c1-0"))
    s.connect_heartbeat("w1", 1, ("c1", "c1-0"), 1, None)
    s.connect_heartbeat("w2", 0, (), 2, ())
    s.connect_heartbeat("w1", 1, ("c1", "c1-0"), 2, ("c1",))  # revokes c1-0
    if not skip_ack:
        s.connect_heartbeat("w1", 2, ("c1",), 2, None)  # acknowledged
    s.connect_heartbeat("w2", 2, (), 2, ("c1-0",))  # line 11 (skip_ack) / 13
    return s


def epochs_backwards() -> Script:
    s = draft(False)
    s.connect_heartbeat("w1", 2, ("c1",), 1, None)  # line 15
    return s


def assignors(accept_disjoint: bool, refuse_covered: bool) -> Script:
    """w1 names incremental [1-3]; w2 [2-4] overlaps (and w1 does not cover it, w3 [0-5]
    would); w4 [5-6] meets nobody."""
    s = Script()
    s.connect_heartbeat("w1", 0, (), 1, (), assignors=(("incremental", 1, 3),))
    s.connect_heartbeat("w2", 0, (), 2, (), assignors=(("incremental", 2, 4),))
    s.connect_heartbeat("w3", 0, (), 0, None, error=112 if refuse_covered else 0,  # line 7
                        assignors=(("incremental", 0, 5),))
    s.connect_heartbeat("w4", 0, (), 3 if accept_disjoint else 0, None,  # line 9
                        error=0 if accept_disjoint else 112, assignors=(("incremental", 5, 6),))
    return s


def settled_unbalanced() -> Script:
    """w2 joins; the leader revokes nothing and keeps all the work: the round settles unbalanced."""
    s = Script()
    s.join("w1", 1, "w1", members={"w1": ()})
    s.sync("w1", 1, "w1", assigned=("c1", "c1-0", "c1-1"))
    s.join("w1", 2, "w1", owned=("c1", "c1-0", "c1-1"), members={"w1": ("c1", "c1-0", "c1-1"), "w2": ()})
    s.join("w2", 2, "w1")
    s.sync("w1", 2, "w1")  # line 11
    s.sync("w2", 2, "w1")
    return s


CASES = {
    "clean-incremental": (incremental(), set()),
    "revocation-skipped": (incremental("revocation-skipped"),
                           {("CONN-INV-02", "revoke-before-reassign", 13, "c1-1"), ("CONN-INV-01", "double-ownership", 13, "c1-1")}),
    "revoked-same-round": (incremental("same-round"), {("CONN-INV-02", "revoke-before-reassign", 13, "c1-1")}),
    "stale-accepted": (incremental("stale-accepted"), {("CLS-HB-01", "stale-generation-refused", 23, None)}),
    "generation-backwards": (incremental("generation-backwards"), {("CLS-JOIN-11", "generation-monotonic", 27, None)}),
    "session-expired": (incremental("session-expired"), {("CLS-SESS-01", "session-timeout-fenced", 27, None)}),
    "clean-eager": (eager(False), set()),
    "double-eager": (eager(True), {("CONN-INV-01", "double-ownership", 9, "c1-0")}),
    "clean-delay": (delayed(False), set()),
    "early-reassign": (delayed(True), {("CONN-INV-03", "scheduled-delay-honoured", 17, "c1-1")}),
    "settled-unbalanced": (settled_unbalanced(), {("CONN-INV-04", "balanced-when-settled", 11, None)}),
    "clean-draft": (draft(False), set()),
    "draft-unacknowledged": (draft(True), {("C848-RECON-03", "draft-revocation-acknowledged", 11, "c1-0")}),
    "draft-epoch-backwards": (epochs_backwards(), {("C848-INV-02", "generation-monotonic", 15, None)}),
    "clean-assignors": (assignors(False, False), set()),
    "assignors-disjoint-accepted": (assignors(True, False), {("C848-HB-VAL-12", "draft-assignor-selection", 9, None)}),
    "assignors-covered-refused": (assignors(False, True), {("C848-ASSIGNOR-03", "draft-assignor-selection", 7, None)}),
}


@pytest.fixture(scope="module")
def audited(spark, tmp_path_factory) -> tuple[dict[str, set], dict[str, set]]:
    """(Spark's audit, the plain-Python audit) of every case: catalogue id, invariant, line, unit, detail."""
    from conformance.pipeline.audit import audit, audit_group
    from conformance.pipeline.ingest import ingest
    from conformance.pipeline.inputs import resolve
    from conformance.pipeline.tables import EXCHANGE
    from conformance.pipeline.warehouse import Warehouse
    d = tmp_path_factory.mktemp("audit")
    for name, (script, _) in CASES.items():
        script.save(d / f"{name}.jsonl")
    wh = Warehouse(spark, d / "wh")
    summary = ingest(wh, resolve([str(d)]))
    assert summary.rejects == 0, summary.reject_samples
    ex = wh.read("exchanges", EXCHANGE)
    spark_side: dict[str, set] = {name: set() for name in CASES}
    for v in audit(ex).collect():
        spark_side[Path(v.source).stem].add((v.requirement, v.invariant, v.ref, v.unit, v.detail))
    groups: dict[tuple, list] = {}
    for r in ex.where("group_id is not null").collect():
        groups.setdefault((r.source, r.group_id), []).append(r.asDict(recursive=True))
    python_side: dict[str, set] = {name: set() for name in CASES}
    for (source, _), rows in groups.items():
        for v in audit_group(rows):
            python_side[Path(source).stem].add((v["requirement"], v["invariant"], v["ref"], v["unit"], v["detail"]))
    return spark_side, python_side


@pytest.fixture(scope="module")
def found(audited) -> dict[str, set[tuple[str, str, int, str | None]]]:
    return {name: {v[:4] for v in vs} for name, vs in audited[0].items()}


def test_spark_and_python_audits_agree(audited):
    """The window-expression checks and the Python checks (the baseline's) find the same
    violations, to the word, in every case."""
    assert audited[0] == audited[1]


@pytest.mark.parametrize("case", sorted(CASES))
def test_invariant(found, case):
    """The violations found are exactly the planted ones, at the planted line."""
    assert found[case] == CASES[case][1]


def test_violation_points_at_evidence(found):
    """The line a violation names is the response that broke the rule: the planted line
    numbers above are the transcript's own."""
    line = CASES["double-eager"][0].lines[9 - 1]
    assert (line["kind"], line["api"], line["conn"]) == ("response", "SyncGroup", "w2")
    assert ("CONN-INV-01", "double-ownership", 9, "c1-0") in found["double-eager"]


def test_rounds_table_names_who_gave_up_and_got_what(spark, tmp_path):
    """One row per generation of the KIP-415 move of c1-1: revoked from w1 at 2, given to
    w2 at 3, with members, leader and times from the transcript."""
    from conformance.pipeline.ingest import ingest
    from conformance.pipeline.inputs import resolve
    from conformance.pipeline.metrics import rounds_table
    from conformance.pipeline.tables import EXCHANGE
    from conformance.pipeline.warehouse import Warehouse
    s = incremental()
    s.save(tmp_path / "clean.jsonl")
    wh = Warehouse(spark, tmp_path / "wh")
    ingest(wh, resolve([str(tmp_path / "clean.jsonl")]))
    rows = {r.generation: r for r in rounds_table(wh.read("exchanges", EXCHANGE)).collect()}
    assert sorted(rows) == [1, 2, 3]
    two, three = rows[2], rows[3]
    assert (two.member_ids, two.leader, two.protocol, two.mode) == (["w1", "w2"], "w1", "compatible", "incremental")
    assert [(x.member, x.units) for x in two.revoked] == [("w1", ["c1-1"])] and two.revocations == 1
    assert [(x.member, x.units) for x in three.assigned] == [("w2", ["c1-1"])] and three.revocations == 0
    assert rows[1].assigned[0].units == ["c1", "c1-0", "c1-1"]
    # times are the virtual clock's: first JoinGroup request to last SyncGroup answer
    assert three.end_ms - three.start_ms == three.duration_ms > 0
    assert three.span_ms == s.now_ms


def test_lost_work_counts_as_moved_and_paused(spark, tmp_path):
    """w2 leaves; its c1-1 runs nowhere through the leader's 6 s wait and the round that
    gives it to w1: moved once (off the departed w2), paused from w2's absence to then."""
    from conformance.pipeline.ingest import ingest
    from conformance.pipeline.inputs import resolve
    from conformance.pipeline.metrics import rounds_table
    from conformance.pipeline.tables import EXCHANGE
    from conformance.pipeline.warehouse import Warehouse
    delayed(False).save(tmp_path / "lost.jsonl")
    wh = Warehouse(spark, tmp_path / "wh")
    ingest(wh, resolve([str(tmp_path / "lost.jsonl")]))
    rows = {r.generation: r for r in rounds_table(wh.read("exchanges", EXCHANGE)).collect()}
    assert [rows[g].units_moved for g in (1, 2, 3)] == [0, 0, 1]
    # from generation 2's first JoinGroup (w2 missing) to generation 3's last SyncGroup answer
    assert rows[3].pause_ms == rows[3].end_ms - rows[2].start_ms >= 6000


def test_every_rule_names_catalogue_ids():
    """Every id an audit rule may name is a requirement of the catalogue (the suites' ids)."""
    from conformance.catalogue.requirements import load_catalogue
    from conformance.pipeline.audit import AUDITED, CHECKS, DEFAULT_REQUIREMENT
    cat = load_catalogue()
    assert set(DEFAULT_REQUIREMENT) == set(CHECKS) and AUDITED
    assert sorted(r for r in AUDITED if r not in cat) == []
