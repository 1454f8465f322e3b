"""For tests that need a Docker engine: skipped with the reason where none answers, unless
``CONNECT_CONFORMANCE_DOCKER=required`` (exported by .ci/docker-engine.sh once an engine
answers, so that a CI run with an engine cannot skip them): then they fail."""

from __future__ import annotations

import os

import pytest

from fakebroker.containers.engine import docker_unavailable


def require_docker() -> None:
    why_not = docker_unavailable()
    if why_not is None:
        return
    if os.environ.get("CONNECT_CONFORMANCE_DOCKER") == "required":
        pytest.fail(f"no Docker engine although one is required: {why_not}", pytrace=False)
    pytest.skip(f"no Docker engine: {why_not}")
