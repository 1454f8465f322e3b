"""Helpers shared by the test suite (hypothesis strategies derived from message specs)."""
