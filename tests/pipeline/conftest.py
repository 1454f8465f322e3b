"""One local SparkSession per test process, with small-test settings: each module is an
xdist_group of its own (its module-scoped warehouse built once), so under `make test` the
modules run side by side, each process with a Spark JVM of its own."""

from __future__ import annotations

import pytest

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")


@pytest.fixture(scope="session")
def spark():
    from conformance.pipeline.session import spark_session
    s = spark_session("local[2]", {"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false",
                                   "spark.default.parallelism": "2"}, progress=False)
    yield s
    s.stop()
