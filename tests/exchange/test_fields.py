"""The exchange's field table: every column has a source and a reader, and a new row is a
new column of ``exchange_fields``, read from recorded exchanges (the golden transcripts,
recorded from the fake broker by ``conformance golden``)."""

from __future__ import annotations

from pathlib import Path

from fakebroker.exchange.fields import (CONNECT_HB, FIELDS, INT, READERS, Field, exchange_fields, only,
                                        resp)
from fakebroker.exchange.pairing import exchanges
from fakebroker.exchange.transcript import load
from fakebroker.protocol import default_registry

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "golden"
# One more column: the interval the draft's coordinator asks a member to heartbeat at.
INTERVAL = Field("heartbeat_interval_ms", INT, None, only((CONNECT_HB, resp("HeartbeatIntervalMs"))))


def recorded_pairs(*names: str) -> list[tuple[str, dict, dict | None]]:
    reg = default_registry()
    out = []
    for name in names:
        for q, p in exchanges(load(GOLDEN / name, reg).events):
            if q is not None and q.body is not None:
                out.append((q.api or reg.api_name(q.api_key or -1), q.body, p.body if p else None))
    return out


def test_every_column_is_named_once_and_taken_by_a_known_reader() -> None:
    names = [f.name for f in FIELDS]
    assert len(names) == len(set(names))
    for f in FIELDS:
        assert f.takes(), f.name
        for t in f.takes():
            assert t.side in ("request", "response", "embedded"), (f.name, t)
            assert t.side == "embedded" or t.how in READERS, (f.name, t)


def test_a_new_row_is_a_new_column_of_every_exchange_of_its_api() -> None:
    pairs = recorded_pairs("C848-HB-HND-12.jsonl", "C848-HB-VAL-10.2.jsonl")
    answered = [(api, q, p) for api, q, p in pairs if api == CONNECT_HB and p is not None]
    assert answered
    for api, q, p in pairs:
        before = exchange_fields(api, q, p)
        after = exchange_fields(api, q, p, FIELDS + (INTERVAL,))
        assert "heartbeat_interval_ms" not in before
        if api == CONNECT_HB:
            assert after == {**before, "heartbeat_interval_ms": (p or {}).get("HeartbeatIntervalMs")}
        else:
            assert after == before
    assert {p["HeartbeatIntervalMs"] for _, _, p in answered} == \
        {exchange_fields(a, q, p, FIELDS + (INTERVAL,))["heartbeat_interval_ms"] for a, q, p in answered}
