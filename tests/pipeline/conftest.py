"""One local SparkSession per test process, with small-test settings. Every test that uses
it is of one xdist_group, ``spark``, so under `make test` one process runs them all with one
Spark JVM: a JVM of its own per module cost each module ~35 s more CPU (its start and JIT
warm-up; the five modules: 252 -> 150 s CPU in one process) on a suite bound by the
machine's two cores. The group is the suite's largest, so it starts first."""

from __future__ import annotations

import pytest

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")


@pytest.hookimpl(tryfirst=True)  # before the grouping hooks read the marker (xdist's, tests/conftest.py)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("spark"))


@pytest.fixture(scope="session")
def spark():
    from conformance.pipeline.session import spark_session
    s = spark_session("local[2]", {"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false",
                                   "spark.default.parallelism": "2"}, progress=False)
    yield s
    s.stop()
