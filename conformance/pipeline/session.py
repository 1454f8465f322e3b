"""The SparkSession every pipeline command runs in: embedded ``local[*]`` by default, any
cluster by ``--master``; Spark's own logging kept off the user's screen."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable

from pyspark import SparkContext
from pyspark.sql import SparkSession

from fakebroker.jvm_fast_start import FLAGS

from . import driver_archive

# Spark prints INFO/WARN lines (and Java stack traces on bad input) through log4j2; the
# pipeline reports problems itself, so only Spark's errors that reach us as exceptions count.
_LOG4J = """
rootLogger.level = error
rootLogger.appenderRef.stdout.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = spark: %p %c{1}: %m%n%ex{0}
logger.jetty.name = org.sparkproject.jetty
logger.jetty.level = off
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = off
"""


# The driver JVM of a small input (in local mode the executors too) does seconds of work:
# C2's background compilations and G1's threads would cost more CPU than they save (the
# reasons and flags of fakebroker.jvm_fast_start), and it maps Spark's classes from a
# class-data archive (driver_archive). A large input keeps the defaults, whose compiled code
# pays off over minutes of work.
FAST_START = FLAGS


class ConfError(ValueError):
    """A ``--conf`` argument that is not ``key=value``."""


def parse_conf(items: Iterable[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfError(f"--conf {item!r}: expected key=value")
        out[key.strip()] = value
    return out


def _log4j_file() -> str:
    path = os.path.join(os.path.expanduser("~/.cache/connect-conformance"), "spark-log4j2.properties")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if not os.path.exists(path) or open(path).read() != _LOG4J:
        with open(path, "w") as f:
            f.write(_LOG4J)
    return path


def driver_java_options(fast_start: bool) -> str:
    """The driver JVM's options (those of its class-data archive aside)."""
    return " ".join((_log4j_option(), *(FAST_START if fast_start else ())))


def _log4j_option() -> str:
    return f"-Dlog4j2.configurationFile=file:{_log4j_file()}"


def spark_session(master: str | None = None, conf: dict[str, str] | None = None,
                  app: str = "connect-conformance pipeline", progress: bool | None = None,
                  fast_start: bool = False) -> SparkSession:
    """Get (or create) the session. ``progress``: Spark's console progress bar; on by
    default only when stderr is a terminal (a bar in a log file is noise). ``fast_start``:
    a driver JVM for a small input (see FAST_START)."""
    log4j = _log4j_option()
    driver = driver_java_options(fast_start)
    # Under spark-submit (a gateway already started) the master is spark-submit's.
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ
    master = master or os.environ.get("SPARK_MASTER") or (None if submitted else "local[*]")
    if not submitted:
        reachable(master)
    archive, builds = None, False
    # Only a JVM started here, with the driver's options ours (a user's replace them).
    if fast_start and not submitted and SparkContext._active_spark_context is None \
            and "spark.driver.extraJavaOptions" not in (conf or {}):
        archive = driver_archive.driver_archive(driver, conf or {})
        if archive is not None:
            opts, builds = driver_archive.options(archive)
            driver = " ".join((driver, *opts))
    if not submitted:  # executors here run the driver's interpreter (pandas, pyarrow, the codec)
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        if fast_start:  # spark-submit's launcher JVM (bin/spark-class) only builds a command line
            os.environ.setdefault("SPARK_LAUNCHER_OPTS", " ".join(FAST_START))
    b = SparkSession.builder.appName(app)
    if master:
        b = b.master(master)
    b = (b
         .config("spark.driver.extraJavaOptions", driver)
         .config("spark.executor.extraJavaOptions", log4j)
         .config("spark.ui.showConsoleProgress",
                 str(sys.stderr.isatty() if progress is None else progress).lower())
         .config("spark.ui.enabled", "false")  # a web server nobody opens: its start is CPU on every run
         .config("spark.sql.session.timeZone", "UTC")
         .config("spark.sql.execution.arrow.pyspark.enabled", "true")
         .config("spark.sql.sources.partitionOverwriteMode", "dynamic"))
    # Shuffles are sized by their data, not by a fixed count: many partitions up front,
    # merged by adaptive execution into ~16 MB (compressed) ones, at least one per core. A
    # small input gets a few (each is a Python worker round trip for the per-group steps); a
    # large one sorts each partition in memory (at 16M, 4 fixed partitions spilled to disk).
    b = (b.config("spark.sql.shuffle.partitions", "400")
         .config("spark.sql.adaptive.enabled", "true")
         .config("spark.sql.adaptive.coalescePartitions.enabled", "true")
         .config("spark.sql.adaptive.advisoryPartitionSizeInBytes", "16m"))
    # Arrow batches to Python are cut by row count only: with a byte limit set (Spark's
    # default, 64 MB), Spark 4 re-measures the whole batch after every row it adds, which
    # for nested columns (lists of structs) cost about a third of the JVM's time per row.
    b = b.config("spark.sql.execution.arrow.maxBytesPerBatch", str(2**31 - 1))
    # A partitioned write keeps one file open per partition value (a few days, two tables)
    # instead of sorting every row by its partition first.
    b = (b.config("spark.sql.optimizer.plannedWrite.enabled", "false")
         .config("spark.sql.maxConcurrentOutputFileWriters", "8"))
    for k, v in (conf or {}).items():
        b = b.config(k, v)
    _query_context_to_log()
    since = log_size()
    try:
        spark = _quietly(b.getOrCreate)
    except BaseException:
        if builds and archive is not None:  # no JVM to write it: the next run builds
            archive.finish(False)
        raise
    if archive is not None:
        driver_archive.started(spark, archive, builds, jvm_log(), since)
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _query_context_to_log() -> None:
    """PySpark logs every analysis error's query context (a JSON document with the whole Java
    stack, ~20 KB) through two Python loggers of its own that print to stderr; into Spark's
    log file with the JVM's output instead."""
    import logging

    from pyspark.logger import PySparkLogger
    for name in ("DataFrameQueryContextLogger", "SQLQueryContextLogger"):
        logger = PySparkLogger.getLogger(name)
        for h in list(logger.handlers):
            logger.removeHandler(h)
        logger.addHandler(logging.FileHandler(jvm_log(), encoding="utf-8"))
        logger.propagate = False


# A standalone master's client tries three times, 20 s each, before "All masters are
# unresponsive! Giving up."; a master that does not even accept a connection is told at once.
PROBE_TIMEOUT_S = 3.0


def reachable(master: str | None) -> None:
    """ConfError (one line) when no master of a ``spark://h1:p1,h2:p2`` URL accepts a TCP
    connection within PROBE_TIMEOUT_S; other masters (local, yarn, k8s) are Spark's to check."""
    import socket
    if not master or not master.startswith("spark://"):
        return
    causes = []
    for hostport in master.removeprefix("spark://").split(","):
        host, _, port = hostport.rpartition(":")
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=PROBE_TIMEOUT_S):
                return
        except (OSError, ValueError) as e:
            causes.append(f"{hostport}: {getattr(e, 'strerror', None) or e}")
    raise ConfError(f"--master {master}: All masters are unresponsive ({'; '.join(causes)})")


def spark_cause(since: int) -> str | None:
    """Spark's own first error line in its log after offset ``since`` (the cause a Py4J error
    names only as "An error occurred while calling ...")."""
    try:
        with open(jvm_log(), encoding="utf-8", errors="replace") as f:
            f.seek(since)
            lines = [ln.strip() for ln in f if ln.startswith("spark: ERROR")]
    except OSError:
        return None
    return lines[0].split(": ", 2)[-1][:300] if lines else None  # the first: the root cause


def job_cause(text: str) -> str | None:
    """The root cause in a failed job's Java error text: the exception of the task's last
    attempt (``most recent failure: Lost task ...: <cause>``), else the last ``Caused by:``
    line; the rest of the text is a stack trace."""
    import re
    m = re.search(r"most recent failure: Lost task .*?\): (\S+.*)", text)
    if m:
        return m.group(1).strip()[:300]
    causes = [ln.strip().removeprefix("Caused by: ") for ln in text.splitlines() if ln.strip().startswith("Caused by: ")]
    return causes[-1][:300] if causes else None


def log_size() -> int:
    try:
        return os.path.getsize(jvm_log())
    except OSError:
        return 0


def jvm_log() -> str:
    return os.path.join(os.path.expanduser("~/.cache/connect-conformance"), "spark-jvm.log")


def _quietly(start):  # noqa: ANN001, ANN202
    """Start the JVM with its stderr in a log file: the JVM and the Python workers it forks
    keep that stderr for life, so no Java stack trace or launcher warning reaches the screen.
    Our own process's stderr is restored at once."""
    if SparkSession.getActiveSession() is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return start()
    sys.stderr.flush()
    saved = os.dup(2)
    fd = os.open(jvm_log(), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(fd, 2)
        return start()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(fd)
