"""Kafka Connect's side of the classic group protocol, as a worker runs it: the embedded
protocol's bytes (``embedded``: worker metadata and assignments, protocols v0-v2) and the
leader's KIP-415 incremental cooperative assignor (``assignor``). Used by the bundled
workers and by the suites and tests that build or check Connect payloads."""
