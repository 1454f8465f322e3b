"""Kafka-compatible brokers written by others, run as coordinator targets to calibrate the
suite (a broker nobody here wrote is where the suite's own assumptions show)."""
