"""Coordinator suite: scripted workers talk to the target over the wire."""
