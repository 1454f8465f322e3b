"""A consumer group's embedded bytes, as real confluent-kafka (librdkafka) members sent them
through the fake broker: decoded into partitions (the units its rounds count), and, garbled,
a counted decode error on the exchange, never a crash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.cli import main
from fakebroker.exchange.fields import embedded_fields

from .conftest import CONSUMER_TOPIC


def _exchanges(transcript: Path, api: str) -> list[tuple[int, dict, dict]]:
    """(response line, request body, response body) of every ``api`` exchange, in wire order."""
    asked: dict[tuple, dict] = {}
    out = []
    for n, text in enumerate(transcript.read_text().splitlines(), 1):
        d = json.loads(text)
        if d.get("api") != api:
            continue
        key = (d["conn"], d["correlation_id"])
        if d["kind"] == "request":
            asked[key] = d["body"]
        else:
            out.append((n, asked.pop(key), d["body"]))
    return out


def test_a_real_consumer_groups_bytes_decode_into_partitions(consumer_run):
    (transcript,) = consumer_run.transcripts
    every = {f"{CONSUMER_TOPIC}-{p}" for p in range(4)}
    joins = _exchanges(transcript, "JoinGroup")
    assert joins and all(q["ProtocolType"] == "consumer" for _, q, _ in joins)
    for _, q, r in joins:
        got = embedded_fields("JoinGroup", q, r)
        assert "embedded_error" not in got and "meta_version" not in got  # Connect's columns stay null
        assert got["owned"] is not None and set(got["owned"]) <= every  # subscription v1+: KIP-429's owned partitions
    answered = [(q, embedded_fields("SyncGroup", q, r)) for _, q, r in _exchanges(transcript, "SyncGroup")
                if r["ErrorCode"] == 0]
    assert answered
    plans = {}
    for q, got in answered:
        assert "embedded_error" not in got and "assignment_version" not in got, got
        for p in got.get("plan") or ():
            plans[(q["GenerationId"], p["member"])] = set(p["assigned"])
    for q, got in answered:  # the coordinator hands each member what the leader's plan gave it
        assert set(got["assigned"]) <= every
        assert plans.get((q["GenerationId"], q["MemberId"]), set(got["assigned"])) == set(got["assigned"])
    final = [got for q, got in answered if got.get("plan")][-1]["plan"]
    assert {u for p in final for u in p["assigned"]} == every  # range: every partition, once
    assert set(final[0]["assigned"]) == {f"{t}-{p}" for t, p in consumer_run.alone}


@pytest.mark.parametrize("garble", [lambda h: h[:-2], lambda h: h + "00", lambda h: "0009" + h[4:], lambda h: h[:-1]],
                         ids=["truncated", "trailing byte", "unknown version", "not hex"])
def test_garbled_consumer_bytes_are_a_decode_error_on_the_exchange(consumer_run, garble):
    (transcript,) = consumer_run.transcripts
    _, q, r = next(x for x in _exchanges(transcript, "SyncGroup") if x[2]["ErrorCode"] == 0 and x[2]["Assignment"])
    got = embedded_fields("SyncGroup", q, {**r, "Assignment": garble(r["Assignment"])})
    assert got["embedded_error"].startswith("response Assignment: ") and "assigned" not in got
    _, q, r = next(x for x in _exchanges(transcript, "JoinGroup") if x[1]["Protocols"])
    meta = q["Protocols"][0]["Metadata"]
    got = embedded_fields("JoinGroup", {**q, "Protocols": [{**q["Protocols"][0], "Metadata": garble(meta)}]}, r)
    assert got["embedded_error"].startswith(("Protocols[0].Metadata: ", "Members[*].Metadata: "))


def test_the_audit_counts_an_exchange_whose_bytes_do_not_decode(spark, consumer_run, tmp_path, capsys):
    """The real recording with one answered assignment cut short: the audit runs, counts the
    exchange, and keeps the codec's reason on it."""
    (transcript,) = consumer_run.transcripts
    line, _, _ = next(x for x in _exchanges(transcript, "SyncGroup") if x[2]["ErrorCode"] == 0 and x[2]["Assignment"])
    lines = transcript.read_text().splitlines()
    d = json.loads(lines[line - 1])
    d["body"]["Assignment"] = d["body"]["Assignment"][:-2]
    lines[line - 1] = json.dumps(d)
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(lines) + "\n")
    wh = tmp_path / "wh"
    assert main(["audit", str(cut), "--warehouse", str(wh)]) == 0
    assert "1 exchange(s) with embedded bytes their protocol's decoder refuses" in capsys.readouterr().out
    bad = spark.read.parquet(str(wh / "exchanges")).where("embedded_error IS NOT NULL").collect()
    assert [(r.resp_ref, r.api, r.assigned) for r in bad] == [(line, "SyncGroup", None)]
    assert bad[0].embedded_error.startswith("response Assignment: ")
