from __future__ import annotations

import pytest

from .harness import Harness


@pytest.fixture
def h() -> Harness:
    """A coordinator with Kafka's defaults and member ids c<n>-<counter>, at t=0."""
    return Harness()
