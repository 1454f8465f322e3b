"""Golden transcripts: every golden scenario has one, they cannot drift from a fresh run, and the fake
broker passes every one through client-side replay (virtual time, random member ids, groups
unique per run)."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.harness.golden import RULES_FILE
from conformance.suites.coordinator.golden.generate import default_dir, drift, render_all, rules_document
from conformance.suites.coordinator.golden.registry import GOLDENS
from fakebroker.protocol import default_registry
from fakebroker.script.golden_broker import golden_broker
from fakebroker.script.replay import VirtualPacer, replay, run_token
from fakebroker.exchange.transcript import Transcript, load

REG = default_registry()

GOLDEN = default_dir()
FILES = sorted(GOLDEN.glob("*.jsonl"))
CMD = [sys.executable, "-m", "conformance.cli"]


def test_every_rule_has_a_transcript_and_every_transcript_a_rule() -> None:
    listed = json.loads((GOLDEN / RULES_FILE).read_text())
    ids = [r["id"] for r in listed["rules"]]
    assert ids == sorted(GOLDENS) and len(set(ids)) == len(ids)
    assert sorted(f.stem for f in FILES) == ids
    for f in FILES:
        head = load(f, REG).header
        assert head is not None and head["origin"] == "golden" and head["id"] == f.stem
        entry = next(r for r in listed["rules"] if r["id"] == f.stem)
        assert entry["transcript"] == f.name and head["rules"] == entry["requirements"], f.name


def test_rule_ids_are_stable_and_well_formed() -> None:
    """A transcript is named for the catalogue requirement it is a case of (``.N``: that
    requirement's Nth), in the live scheme: CLS-* (classic), C848-* (the draft's connect group)."""
    import re
    from fakebroker.coordinator.errors import DraftErrorCode
    from fakebroker.protocol.error_codes import ErrorCode
    codes = {e.name for e in ErrorCode} | {e.name for e in DraftErrorCode}
    requirement = r"CLS-[A-Z]+-\d\d|C848-[A-Z]+(-[A-Z]+)?-\d\d"
    for rid, rule in GOLDENS.items():
        assert re.fullmatch(rf"({requirement})(\.[2-9])?", rid), rid
        assert rule.id.startswith("C848") == rule.api.startswith("ConnectGroup"), rid
        assert rule.expect == "NONE" or rule.expect in codes, rid
        # Request Validation (-VAL-): INVALID_REQUEST, or the draft's UNSUPPORTED_ASSIGNOR checks
        assert ("-VAL-" in rid) == (rule.expect in ("INVALID_REQUEST", "UNSUPPORTED_ASSIGNOR")
                                    and rid.startswith("C848-HB-VAL") or rule.expect == "INVALID_REQUEST"), rid
        assert all(re.fullmatch(requirement, a) for a in rule.requirements), rid
        if "." in rid:  # a further transcript of a requirement that has its first one
            assert rid.split(".")[0] in GOLDENS, rid
    apis = {r.api for r in GOLDENS.values()}
    assert apis == {"JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "DescribeGroups",
                    "ListGroups", "OffsetCommit", "OffsetFetch", "ConnectGroupHeartbeat",
                    "ConnectGroupPrepareAssignment", "ConnectGroupInstallAssignment"}


def test_a_scenario_the_catalogue_does_not_list_is_refused_by_name() -> None:
    """The catalogue alone says which requirements a transcript is a case of: a scenario for
    a transcript no requirement lists is refused, naming the id and the catalogue."""
    from conformance.suites.coordinator.golden.registry import NotInCatalogue, Golden
    for rid in ("CLS-JOIN-99", "CLS-JOIN-25.7"):
        with pytest.raises(NotInCatalogue, match=rf"{re.escape(rid)}.jsonl in the transcripts of"):
            Golden(rid, "JoinGroup", "t", "NONE").requirements
    assert GOLDENS["CLS-JOIN-31.2"].requirements == ["CLS-JOIN-31", "CLS-JOIN-26", "CLS-SYNC-05"]


def test_golden_files_are_what_a_fresh_run_produces() -> None:
    files = render_all(REG)
    assert drift(GOLDEN, files) == []
    assert json.loads(files[RULES_FILE]) == rules_document()


def test_drift_names_the_file_and_line(tmp_path: Path) -> None:
    copy = tmp_path / "golden"
    shutil.copytree(GOLDEN, copy)
    victim = copy / "CLS-HB-01.jsonl"
    lines = victim.read_text().splitlines(keepends=True)
    n = next(i for i, line in enumerate(lines) if '"ErrorCode":22' in line)
    lines[n] = lines[n].replace('"ErrorCode":22', '"ErrorCode":0')
    victim.write_text("".join(lines))
    (copy / "CLASSIC-HB-ERR-99.jsonl").write_text(lines[0])
    (copy / "CLS-SYNC-05.jsonl").unlink()
    r = subprocess.run([*CMD, "golden", "--check", "--dir", str(copy)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 1
    assert f"CLS-HB-01.jsonl: differs from a fresh run from line {n + 1}" in r.stdout
    assert "CLS-SYNC-05.jsonl: missing" in r.stdout
    assert "CLASSIC-HB-ERR-99.jsonl: no golden scenario records it any more" in r.stdout


async def replay_on_fresh_broker(t: Transcript) -> object:
    """A broker like the golden one, but with Kafka's random member-id suffixes."""
    assert t.header is not None
    b = golden_broker(t.header["coordinator"], REG)
    await b.start()
    try:
        return await replay(t, b.bootstrap, REG, pacer=VirtualPacer(b), timeout_s=5,
                            unique=run_token())
    finally:
        await b.stop()


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_the_fake_broker_passes_every_golden_transcript(path: Path) -> None:
    report = asyncio.run(replay_on_fresh_broker(load(path, REG)))
    assert report.ok, report.render(REG)  # type: ignore[attr-defined]


def test_goldens_have_matchers_for_what_varies() -> None:
    t = load(GOLDEN / "CLS-SYNC-05.jsonl", REG)
    first_id = next(e for e in t.events if e.kind == "response" and e.api == "JoinGroup")
    assert first_id.match["MemberId"] == {"capture": "member.1", "pattern": "^w1-"}
    rejoin = next(e for e in t.events if e.kind == "request" and e.api == "JoinGroup"
                  and e.body is not None and e.body["MemberId"])
    assert rejoin.match == {"GroupId": {"ref": "group.g1"}, "MemberId": {"ref": "member.1"}}
    assert t.header is not None and t.header["unique"] == ["group.g1"]
    # Messages quoting a group id become templates.
    d = load(GOLDEN / "CLS-DESC-01.jsonl", REG)
    resp = next(e for e in d.events if e.kind == "response")
    assert resp.match["Groups[0].ErrorMessage"] == {"format": "Group {group.g1} not found."}
    # Virtual-only transcripts say why.
    slow = load(GOLDEN / "CLS-REB-04.jsonl", REG)
    assert slow.header is not None and "5-minute" in slow.header["virtual_only"]


def _responses(name: str, api: str) -> list:
    return [e for e in load(GOLDEN / f"{name}.jsonl", REG).events if e.kind == "response" and e.api == api]


def _unpinned(ev: object) -> set[str]:
    return {p for p, m in (ev.match or {}).items() if m.get("unpinned")}  # type: ignore[attr-defined]


def test_pinned_fields_follow_the_requirement() -> None:
    """What a golden step may fail on: an error answer's code, not its echoes; the member id
    MEMBER_ID_REQUIRED hands out; what a requirement names (CLS-DESC-01's message, CLS-DESC-03's
    operations) even where it is unpinned by default."""
    refused, = [e for e in _responses("CLS-JOIN-18", "JoinGroup")]
    assert "ErrorCode" not in _unpinned(refused) and {"MemberId", "GenerationId", "ProtocolType"} <= _unpinned(refused)
    required = _responses("CLS-JOIN-07", "JoinGroup")[0]
    assert required.body["ErrorCode"] == 79 and "MemberId" not in _unpinned(required)
    assert "ProtocolType" in _unpinned(required)
    leave = _responses("CLS-LEAVE-11", "LeaveGroup")[0]
    assert _unpinned(leave) == {"Members[0].MemberId"}
    unknown = _responses("CLS-DESC-01", "DescribeGroups")[0]
    assert "Groups[0].ErrorMessage" not in _unpinned(unknown) and "Groups[0].GroupState" in _unpinned(unknown)
    ops = _responses("CLS-DESC-03", "DescribeGroups")[0]
    assert "Groups[0].AuthorizedOperations" not in _unpinned(ops)
    assert {"Groups[0].ErrorMessage", "Groups[0].Members[0].ClientHost"} <= _unpinned(ops)
    other = _responses("CLS-STATE-03", "DescribeGroups")[-1]
    assert {"Groups[0].AuthorizedOperations", "Groups[0].ErrorMessage"} <= _unpinned(other)
    fetched = _responses("CLS-FETCH-02", "OffsetFetch")[-1]
    assert "Topics[0].Partitions[0].Metadata" in _unpinned(fetched)
    impostor = _responses("CLS-LEAVE-09", "LeaveGroup")[0]  # a static member's fencing stays pinned
    assert "Members[0].ErrorCode" not in _unpinned(impostor) and "ErrorCode" not in _unpinned(impostor)


def test_no_golden_sends_or_expects_a_literal_generation_after_the_first_answered() -> None:
    """Every generation number a golden sends or expects once its group answered one is bound
    (``ref`` generation.<group>, ``plus`` the recorded difference)."""
    for f in FILES:
        if f.name.startswith("C848"):
            continue
        seen = False
        for e in load(f, REG).events:
            if e.body is None or not e.is_frame:
                continue
            v = e.body.get("GenerationId")
            m = (e.match or {}).get("GenerationId", {})
            if seen and isinstance(v, int) and v >= 0:
                assert "ref" in m or "unpinned" in m, f"{f.name} line {e.line}: literal generation {v}"
            seen = seen or "capture" in m
