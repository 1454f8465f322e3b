"""Suite-wide: keep `--dist loadgroup` (make test) grouping by `xdist_group` on pytest 9.2.

pytest-xdist marks a grouped test for its scheduler by appending ``@<group>`` to the test's
node id through ``item._nodeid``, a field pytest 9.2 no longer reads (node ids are
structured there: pytest-dev/pytest-xdist#1386). Every ``xdist_group`` was then silently
ignored: the Spark pipeline's modules ran on every test process at once, each building its
module's warehouse and starting a Spark JVM of its own. On an older pytest xdist's own
suffix is there and nothing changes.

And one real Kafka per test process: the settings of the ``real_kafka`` fixture (session
scope, fakebroker.realkafka.fixture) for every test that asks for it, as a local process
unless ``REAL_KAFKA_BACKEND`` says otherwise: where an engine answers (make test starts one)
``auto`` would put every real Kafka of the suite in a container; the container backend has
tests of its own instead (tests/containers, and the persistence check on both backends).
"""

from __future__ import annotations

import os
from dataclasses import replace

import pytest

from fakebroker.realkafka import KafkaSettings
from fakebroker.realkafka.scenarios import DIFF_SETTINGS

os.environ.setdefault("REAL_KAFKA_BACKEND", "process")
# The Spark driver's class-data archive is built once per machine, at the end of the first
# small audit (a JVM dump of ~10 CPU s, minutes under CI's load); only its own tests build it.
os.environ.setdefault("CONNECT_CONFORMANCE_DRIVER_ARCHIVE", "0")


@pytest.fixture(scope="session")
def real_kafka_settings() -> KafkaSettings:
    """The differential tests' settings (tests/realkafka: 3 partitions per new topic, as their
    fake twin has), for the proxy's tests too: with two settings each test process started
    two brokers, on a suite bound by the machine's two cores. Tests keep to their own groups
    and topics (unique names), as they already do within each folder. Cheaper to run, and
    answering the same: C1 only (start-up 4.2 -> 2.3 s CPU) and a no-op metadata record every
    5 s rather than every 0.5 s (idle 1.5 -> 0.8 s CPU a minute); a single-node broker's
    metadata log has no follower waiting on them."""
    return replace(DIFF_SETTINGS, jvm_args=(*DIFF_SETTINGS.jvm_args, "-XX:TieredStopAtLevel=1"),
                   properties={**DIFF_SETTINGS.properties, "metadata.max.idle.interval.ms": 5000})


def group_suffix(item: pytest.Item) -> str | None:
    """``@<group>`` as xdist's loadgroup scheduler reads it (several groups joined by ``_``)."""
    names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                    for m in item.iter_markers("xdist_group")})
    return "@" + "_".join(names) if names else None


@pytest.hookimpl(trylast=True)  # after xdist's own, which may have added it already
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not getattr(config.option, "loadgroup", False):  # set in an xdist worker under --dist loadgroup
        return
    try:
        from _pytest.nodeid import NodeId  # pytest >= 9.2
    except ImportError:
        return
    for item in items:
        suffix = group_suffix(item)
        if suffix is not None and not item.nodeid.endswith(suffix):
            item._id = NodeId.parse(item.nodeid + suffix)  # type: ignore[attr-defined]
            if not item.nodeid.endswith(suffix):
                raise pytest.UsageError(f"cannot mark {item.nodeid} for its xdist_group {suffix[1:]} "
                                        f"on pytest {pytest.__version__}")
