"""Ingest: transcripts and captures of the same traffic give the same exchanges (TCP
reassembly through split, reordered, retransmitted and coalesced segments); bad input
becomes rejects naming where; re-ingesting adds nothing; the goldens audit clean."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

import pytest
from scapy.utils import PcapWriter, rdpcap

from fakebroker.protocol import default_registry
from fakebroker.script.export import exchanges as export_exchanges
from fakebroker.script.pcap import pcap_bytes
from fakebroker.exchange.transcript import load

from fakebroker.exchange.synthetic import Script
from .test_audit import incremental

KEY = ("api", "version", "correlation_id", "group_id", "member_id", "generation", "error_code",
       "resp_generation", "leader", "assigned", "revoked", "owned", "member_epoch")
ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "fixtures" / "recorded" / "apache-connect-4.2.0-sessioned-CONN-INC-01.pcap"


def _exchanges_of(path: Path):
    return list(export_exchanges(load(path, default_registry()), default_registry()))


def _mangle(pcap: Path, out: Path) -> None:
    """Swap neighbouring data segments and retransmit some (same bytes again, later)."""
    pkts = list(rdpcap(str(pcap)))
    rng = random.Random(7)
    data = [i for i, p in enumerate(pkts) if len(bytes(p["TCP"].payload))]
    for i in data[1:-1:3]:
        pkts[i], pkts[i + 1] = pkts[i + 1], pkts[i]
    for i in rng.sample(data, 4):
        pkts.insert(i + 2, pkts[i].copy())
    w = PcapWriter(str(out), linktype=1, sync=True)
    for p in pkts:
        w.write(p)
    w.close()


def _coalesced(ex):
    """Each connection's consecutive requests sent in one segment (two frames, one write)."""
    out, prev = [], None
    for e in ex:
        if prev is not None and prev.direction == e.direction == "request" and prev.connection == e.connection:
            out[-1] = replace(prev, frame=prev.frame + e.frame)
            prev = None
            continue
        out.append(e)
        prev = e
    return out


def _mistyped(s: Script, path: Path) -> dict[int, str]:
    """The script with three bodies the strict codec refuses though Spark's reader would take
    them (a string for an integer, an unknown field): file line -> the start of its reject."""
    lines = json.loads(json.dumps(s.lines))
    hb = [i for i, line in enumerate(lines) if line.get("api") == "Heartbeat"]
    lines[hb[0]]["body"]["GenerationId"] = "2"
    lines[hb[3]]["body"]["ErrorCode"] = "0"
    lines[hb[4]]["body"]["Colour"] = "red"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    orphan = "response with correlation id"
    return {hb[0] + 1: "request body: body.GenerationId: expected an integer", hb[1] + 1: orphan,
            hb[3] + 1: "response body: body.ErrorCode: expected an integer",
            hb[4] + 1: "request body: body.Colour: no field of that name", hb[5] + 1: orphan}


@pytest.fixture(scope="module")
def corpus(spark, tmp_path_factory):
    from conformance.pipeline.ingest import ingest
    from conformance.pipeline.inputs import resolve
    from conformance.pipeline.warehouse import Warehouse
    d = tmp_path_factory.mktemp("ingest")
    tx = incremental().save(d / "traffic.jsonl")
    ex = _exchanges_of(tx)
    (d / "split.pcap").write_bytes(pcap_bytes(ex, 9092, mss=23))  # every frame over many segments
    _mangle(d / "split.pcap", d / "mangled.pcap")
    (d / "coalesced.pcap").write_bytes(pcap_bytes(_coalesced(ex), 9092))
    good = (d / "split.pcap").read_bytes()
    (d / "truncated.pcap").write_bytes(good[: len(good) * 2 // 3])
    http = [replace(e, frame=b"GET / HTTP/1.1\r\nHost: x\r\n\r\n") for e in ex[:1]]
    (d / "http.pcap").write_bytes(pcap_bytes(http, 8080))
    lines = tx.read_text().splitlines(keepends=True)
    (d / "bad.jsonl").write_text(lines[0] + lines[1] + "{not json\n" + '["a list"]\n' + lines[2]
                                 + lines[3][:40] + "\n", encoding="utf-8")
    _mistyped(incremental(), d / "mistyped.jsonl")
    wh = Warehouse(spark, d / "wh")
    first = ingest(wh, resolve([str(d)]))
    again = ingest(wh, resolve([str(d)]))
    return d, wh, first, again


def _rows(wh, name: str):
    from conformance.pipeline.tables import EXCHANGE
    rows = wh.read("exchanges", EXCHANGE).where(f"source like '%/{name}'").collect()
    return sorted((tuple(r[k] if not isinstance(r[k], list) else tuple(r[k]) for k in KEY) for r in rows),
                  key=repr)


@pytest.mark.parametrize("capture", ["split.pcap", "mangled.pcap", "coalesced.pcap"])
def test_capture_gives_the_transcripts_exchanges(corpus, capture):
    d, wh, _, _ = corpus
    expected = _rows(wh, "traffic.jsonl")
    assert len(expected) == 13
    assert _rows(wh, capture) == expected


def test_bad_input_becomes_rejects_naming_where(corpus):
    from conformance.pipeline.tables import REJECT
    d, wh, first, _ = corpus
    rej = {(Path(r.source).name, r.ref_kind, r.ref, r.reason.split(":")[0])
           for r in wh.read("rejects", REJECT).collect()}
    assert ("bad.jsonl", "line", 3, "invalid JSON") in rej
    assert ("bad.jsonl", "line", 4, "expected a JSON object, got list") in rej
    assert ("bad.jsonl", "line", 6, "truncated line") in rej
    reasons = {n: r.reason for r in wh.read("rejects", REJECT).collect()
               for n in [Path(r.source).name] if n.endswith(".pcap")}
    assert reasons["truncated.pcap"].startswith("capture: truncated capture: record at byte")
    assert "not Kafka: size prefix" in reasons["http.pcap"]
    # the good lines of the bad file still count: its first exchange (lines 2 and 5)
    assert len(_rows(wh, "bad.jsonl")) == 1
    assert first.rejects == len(rej)


def test_bodies_the_codec_refuses_become_rejects(corpus):
    """Spark's reader would read "2" into an integer column as null and ignore an unknown
    field; the strict codec refuses both, so each such line is a reject naming its line and
    the codec's reason. A refused request's answer then answers nothing; a request whose
    answer was refused stays, unanswered."""
    from conformance.pipeline.tables import REJECT
    d, wh, _, _ = corpus
    expected = _mistyped(incremental(), d.parent / "mistyped-again.jsonl")
    got = {r.ref: r.reason for r in wh.read("rejects", REJECT).where("source like '%/mistyped.jsonl'").collect()}
    assert sorted(got) == sorted(expected)
    for line, reason in expected.items():
        assert got[line].startswith(reason), (line, got[line])
    rows = _rows(wh, "mistyped.jsonl")
    assert len(rows) == len(_rows(wh, "traffic.jsonl")) - 2
    unanswered = [r for r in rows if r[0] == "Heartbeat" and r[6] is None]
    assert len(unanswered) == 1


def test_reingest_adds_nothing(corpus):
    d, wh, first, again = corpus
    assert first.skipped == 0 and first.exchanges > 0
    assert again.skipped == again.files == first.files
    assert again.exchanges == again.rejects == 0


def test_goldens_and_apache_connect_audit_clean(spark, tmp_path):
    """Every golden transcript, and the capture of Apache Kafka Connect 4.2.0's worker in a
    KIP-415 revocation (fixtures/recorded), ingest without a reject and audit clean."""
    from conformance.pipeline.audit import audit
    from conformance.pipeline.ingest import ingest
    from conformance.pipeline.inputs import resolve
    from conformance.pipeline.tables import EXCHANGE
    from conformance.pipeline.warehouse import Warehouse
    wh = Warehouse(spark, tmp_path / "wh")
    s = ingest(wh, resolve([str(ROOT / "fixtures" / "golden"), str(RECORDED)]))
    assert s.files == len(list((ROOT / "fixtures" / "golden").glob("*.jsonl"))) + 1
    assert s.rejects == 0, s.reject_samples
    assert s.exchanges > 600
    ex = wh.read("exchanges", EXCHANGE)
    real = ex.where(ex.source == str(RECORDED)).where("api = 'SyncGroup' and size(revoked) > 0").collect()
    assert [r.revoked for r in real] == [["conn-a"]]  # the worker's metadata and assignments decoded
    found = audit(ex).collect()
    assert found == [], [(v.source, v.ref, v.detail) for v in found[:5]]


def test_a_refused_body_is_a_reject_on_every_line_that_carries_it(spark, corpus):
    """The codec judges each distinct body of a batch once (``transcripts._problems``): a
    refused line repeated later in the file is a reject there too, with the same reason."""
    from conformance.pipeline.ingest import transcripts
    d, _, _, _ = corpus
    lines = (d / "mistyped.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    expected = _mistyped(incremental(), d.parent / "mistyped-expected.jsonl")
    first = min(n for n, why in expected.items() if why.startswith("request body"))
    again = d.parent / "repeated" / "mistyped-twice.jsonl"
    again.parent.mkdir(exist_ok=True)
    again.write_text("".join(lines) + lines[first - 1], encoding="utf-8")
    df = transcripts.ingest(spark, {str(again): "h"})
    got = dict(sorted((r.ref, r.reject) for r in df.where("reject is not null").collect()))
    assert sorted(got) == sorted([*expected, len(lines) + 1])
    assert got[first].startswith(expected[first])
    assert got[len(lines) + 1] == got[first]
