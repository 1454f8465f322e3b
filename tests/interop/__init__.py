"""Interop tests: our codec against other implementations of the Kafka protocol."""
