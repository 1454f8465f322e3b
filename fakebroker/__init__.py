"""A scriptable fake Kafka broker and group coordinator for Kafka Connect's group protocols."""

__version__ = "0.1.0"
