from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.docker import require_docker

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def engine() -> None:
    require_docker()


@pytest.fixture(scope="session")
def fakebroker_image() -> str:
    require_docker()
    from fakebroker.containers.images import fakebroker_image
    return fakebroker_image(ROOT)
