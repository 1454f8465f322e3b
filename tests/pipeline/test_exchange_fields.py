"""The pipeline's Spark schema and column expressions are made from the exchange's field
table: a new row is a new column of the exchanges table and of its Spark extractor, which
reads every recorded exchange (the golden transcripts) as ``exchange_fields`` does."""

from __future__ import annotations

import json

from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, StructField

from conformance.pipeline.ingest.fields import columns, half
from conformance.pipeline.tables import BODY, EXCHANGE, body_schema, embedded_schema, exchange_schema
from fakebroker.exchange.fields import FIELDS, embedded_apis, embedded_fields, exchange_fields
from tests.exchange.test_fields import GOLDEN, INTERVAL, recorded_pairs

WIDER = FIELDS + (INTERVAL,)


def test_a_new_row_is_a_new_column_of_the_exchanges_table() -> None:
    wider = exchange_schema(WIDER)
    names = EXCHANGE.fieldNames()
    assert wider.fieldNames() == names[:-1] + ["heartbeat_interval_ms", "day"]
    assert wider["heartbeat_interval_ms"] == StructField("heartbeat_interval_ms", IntegerType(), True)
    assert [f for f in wider.fields if f.name != "heartbeat_interval_ms"] == EXCHANGE.fields
    # the body field it reads is parsed too, typed as the column
    assert body_schema(WIDER)["HeartbeatIntervalMs"].dataType == IntegerType()
    assert body_schema() == BODY and "HeartbeatIntervalMs" not in BODY.fieldNames()


def test_the_spark_extractor_reads_every_recorded_exchange_as_exchange_fields_does(spark) -> None:
    pairs = recorded_pairs(*sorted(p.name for p in GOLDEN.glob("*.jsonl")))
    emb_apis = embedded_apis(WIDER)
    rows = [(i, api, json.dumps(q), None if p is None else json.dumps(p),
             json.dumps(embedded_fields(api, q, p or {})) if api in emb_apis else None)
            for i, (api, q, p) in enumerate(pairs)]
    df = spark.createDataFrame(rows, "i int, api string, q string, p string, emb string")
    api, body = F.col("api"), body_schema(WIDER)
    got = df.select("i", F.struct(*columns(half(F.from_json("q", body), api, "request", fields=WIDER),
                                           half(F.from_json("p", body), api, "response", fields=WIDER),
                                           F.from_json("emb", embedded_schema(WIDER)), api, WIDER)).alias("x"))
    spark_rows = {r.i: r.x.asDict(recursive=True) for r in got.collect()}
    assert len(spark_rows) == len(pairs) > 500
    assert any(v["heartbeat_interval_ms"] for v in spark_rows.values())
    for i, (api, q, p) in enumerate(pairs):
        expected = {f.name: None for f in WIDER} | exchange_fields(api, q, p, WIDER)
        assert spark_rows[i] == expected, (api, q, p)
