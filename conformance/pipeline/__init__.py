"""The data pipeline on Spark: transcripts, captures and report folders into a Parquet
warehouse (``ingest``), the protocol invariants checked over every exchange (``audit``),
rebalance metrics, certification history and a report. See docs/pipeline.md."""
