"""What an operator reads off real recordings: a classic consumer group's rounds and
partitions (real confluent-kafka members through the fake broker), each API's own group id
(no phantom "" group of OffsetFetch v8+ rows), no rate per hour from minutes of traffic, and per-unit
pauses of Apache Kafka Connect 4.2.0's incremental round (its capture)."""

from __future__ import annotations

import json
from pathlib import Path

from conformance.cli import main

from .conftest import CONSUMER_GROUP

ROOT = Path(__file__).resolve().parents[2]
CONNECT = ROOT / "fixtures" / "recorded" / "apache-connect-4.2.0-sessioned-CONN-INC-01.pcap"


def _offset_fetch_groups(transcripts: list[Path]) -> list[tuple[int, str, list]]:
    """(version, GroupId, Groups) of every OffsetFetch request, as the recording has it."""
    out = []
    for t in transcripts:
        for line in t.read_text().splitlines():
            d = json.loads(line)
            if d.get("kind") == "request" and d.get("api") == "OffsetFetch":
                out.append((d["version"], d["body"].get("GroupId"), d["body"].get("Groups") or []))
    return out


def _names(partitions) -> set[str]:  # noqa: ANN001
    return {f"{t}-{p}" for t, p in partitions}


def test_consumer_group_rounds_units_and_group_ids(spark, consumer_run, tmp_path, capsys):
    """The consumer group's partitions are its units: each round's assignment is what the
    clients reported holding, the departed member's partitions are the ones that move and
    pause as lost work, and every pause lies within what the recording shows."""
    consumer_recording = consumer_run.transcripts
    fetches = _offset_fetch_groups(consumer_recording)
    assert fetches, "the members fetched no offsets"
    wh = tmp_path / "wh"
    assert main(["audit", *map(str, consumer_recording), "--warehouse", str(wh)]) == 0
    out = capsys.readouterr().out
    ex = spark.read.parquet(str(wh / "exchanges"))
    groups = {r.group_id for r in ex.select("group_id").distinct().collect()} - {None}
    assert groups == {CONSUMER_GROUP}  # no "" group, whatever layout the OffsetFetch used
    fetched = ex.where("api = 'OffsetFetch'").select("version", "group_id").collect()
    assert len(fetched) == len(fetches) and {r.group_id for r in fetched} == {CONSUMER_GROUP}
    assert "1 group(s)" in out
    assert ex.where("embedded_error IS NOT NULL").count() == 0  # every consumer's bytes decoded
    rounds = sorted(spark.read.parquet(str(wh / "rounds")).where(f"group_id = '{CONSUMER_GROUP}'").collect(),
                    key=lambda r: r.generation)
    # both members in one round, then the one left alone, each an eager (range) round
    assert [r.members for r in rounds][-2:] == [2, 1], [(r.generation, r.member_ids) for r in rounds]
    both, alone = rounds[-2:]
    held = lambda r: sorted(sorted(a.units) for a in r.assigned)  # noqa: E731
    assert held(both) == sorted(sorted(_names(p)) for p in consumer_run.shared.values())
    assert held(alone) == [sorted(_names(consumer_run.alone))]
    left = _names(consumer_run.shared["m1"])  # m1 left: its partitions are what moved
    assert alone.units_moved == len(left) == 2
    lost = {p.unit for p in alone.pauses if p.cause == "lost"}
    assert lost == left and {p.unit for p in alone.pauses if p.cause == "eager"} == _names(consumer_run.shared["m0"])
    assert both.units_paused == alone.units_paused == 4 and alone.revocations == 0  # eager: none revoked by name
    assert alone.pause_ms >= alone.duration_ms
    for r in rounds:
        assert r.mode == "eager" and r.protocol == "range"
        assert r.end_ms >= r.start_ms and r.duration_ms == r.end_ms - r.start_ms
        assert 0 <= r.units_moved <= 4 and r.units_paused == len(r.pauses) <= 4
        for p in r.pauses:  # within the recording: from a JoinGroup at or after the group began, to this round's end
            assert p.to_ms == r.end_ms and rounds[0].start_ms <= p.from_ms <= r.start_ms
            assert p.ms == p.to_ms - p.from_ms and (p.cause == "lost" or p.from_ms == r.start_ms)
        assert r.pause_ms == max((p.ms for p in r.pauses), default=0.0)
    # lost work runs nowhere from the first round without its owner: after the round it last ran in
    assert all(p.from_ms >= both.end_ms for p in alone.pauses if p.cause == "lost")
    html = (wh / "report" / "index.html").read_text()
    assert "no rate per hour: no group was seen for an hour" in html


def test_incremental_pauses_per_unit_from_a_real_connect_worker(spark, tmp_path):
    """Connect 4.2.0's capture: a sessioned round revokes conn-a; conn-a runs nowhere from
    that round's first JoinGroup to the answer of the round that gives it out again."""
    wh = tmp_path / "wh"
    assert main(["audit", str(CONNECT), "--warehouse", str(wh)]) == 0
    rounds = sorted(spark.read.parquet(str(wh / "rounds")).collect(), key=lambda r: r.generation)
    revoking = [r for r in rounds if r.revocations]
    assert revoking
    r = revoking[0]
    assert r.mode == "incremental"
    revoked = {u for x in r.revoked for u in x.units}
    assert {p.unit for p in r.pauses} == revoked and r.units_paused == len(revoked)
    for p in r.pauses:
        assert p.cause == "revoked" and p.from_ms == r.start_ms
        back = [x for x in rounds if x.generation > r.generation and any(p.unit in a.units for a in x.assigned)]
        if back:  # given out again: paused until that round's last assignment
            assert p.to_ms == back[0].end_ms and p.ms == p.to_ms - p.from_ms > 0
        else:  # not given out again before the recording ends: no length claimed
            assert p.to_ms is None and p.ms is None
    known = [p.ms for p in r.pauses]
    assert r.pause_ms == (None if None in known else max(known))  # an open pause has no length
