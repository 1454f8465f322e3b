"""The class-data archive of a small input's Spark driver JVM (application class-data sharing,
JDK 13+ dynamic archive): the classes the driver loads mapped from one file, parsed and
verified already, instead of read from Spark's ~290 jars. Loading and verifying them was
about half the driver's planning time on a recording of a thousand exchanges (bench/README.md,
small_audit).

The archive is the Connect workers' kind (fakebroker.jvm_fast_start.ClassArchive: one
builder at a time, a dump at the JVM's own exit renamed into place when complete, its size
recorded), kept under the cache (``<cache>/spark-driver/cds/<key>.jsa``) and keyed by what it
is only valid for: the JDK, PySpark's version, Spark's jars and class path, the driver's
options. The run that builds it waits for its JVM's exit (the dump: ~10 CPU s, once). A JVM that
cannot map the archive runs without it (``-Xshare:auto``); the command says so in one line and
the next run builds it again."""

from __future__ import annotations

import atexit
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from fakebroker.cache_dir import cache_root
from fakebroker.jvm_fast_start import ClassArchive, class_archive

# Environment that changes the driver's JVM or class path (bin/spark-class, the launcher's
# AbstractCommandBuilder.buildClassPath), so an archive built under other values may not fit.
_CLASS_PATH_ENV = ("SPARK_CONF_DIR", "HADOOP_CONF_DIR", "YARN_CONF_DIR", "SPARK_DIST_CLASSPATH",
                   "SPARK_PREPEND_CLASSES", "JAVA_HOME", "JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS")
# The JVM's own warnings (a class-data archive it cannot map, among others) go to its stderr,
# Spark's log, instead of its stdout, which is the command's.
LOG_TO_STDERR = ("-Xlog:disable", "-Xlog:all=warning:stderr")
# The dump at exit takes ~10 CPU s (Spark's classes linked and written, ~180 MB): minutes of
# wall on a machine loaded ten times over. A JVM killed mid-dump leaves nothing kept.
BUILD_WAIT_S = 900.0
# Turns the archive off: a run that must not pay the one build (a CI job that audits once).
SWITCH = "CONNECT_CONFORMANCE_DRIVER_ARCHIVE"


def _java() -> str | None:
    """The ``java`` Spark's launcher runs (bin/spark-class)."""
    home = os.environ.get("JAVA_HOME")
    return os.path.join(home, "bin", "java") if home else shutil.which("java")


def _jdk_release(java: str) -> str:
    try:
        return (Path(os.path.realpath(java)).parents[1] / "release").read_text()
    except OSError:
        return ""


def _spark_home() -> Path | None:
    from pyspark.find_spark_home import _find_spark_home
    try:
        return Path(_find_spark_home())
    except (SystemExit, Exception):  # noqa: BLE001 (PySpark exits when it finds no Spark)
        return None


def driver_archive(driver_options: str, conf: dict[str, str]) -> ClassArchive | None:
    """The archive for a driver JVM started with ``driver_options`` and the user's ``conf``;
    None without a ``java`` or a Spark installation to key it by, or when turned off
    (``CONNECT_CONFORMANCE_DRIVER_ARCHIVE=0``)."""
    if os.environ.get(SWITCH, "1").strip().lower() in ("0", "off", "no", "false"):
        return None
    import pyspark
    java, spark_home = _java(), _spark_home()
    if not java or not os.path.exists(java) or spark_home is None or not (spark_home / "jars").is_dir():
        return None
    env = "\0".join(f"{k}={os.environ.get(k, '')}" for k in _CLASS_PATH_ENV)
    driver_conf = "\0".join(f"{k}={v}" for k, v in sorted(conf.items())
                            if k.startswith(("spark.driver.", "spark.jars")))
    extra = "\0".join((f"pyspark {pyspark.__version__}", str(spark_home), _jdk_release(java), env,
                       driver_options, driver_conf))
    return class_archive(cache_root() / "spark-driver", java, spark_home / "jars", extra)


def options(archive: ClassArchive) -> tuple[list[str], bool]:
    """The driver's JVM options for ``archive`` and whether this JVM builds it. A used archive
    is checked whole (CRC of its regions) before it is mapped: damage inside it is then a
    refused archive, not a crash later."""
    opts, builds = archive.jvm_options()
    if archive.note:
        note(archive.note)
    if opts and not builds:
        opts = ["-Xshare:auto", "-XX:+VerifySharedSpaces", *opts]
    elif builds:  # the dump's ~1,400 lines on classes it cannot keep (signed jars, generated)
        opts = [*opts, "-Xlog:cds=off:stderr"]
    return [*LOG_TO_STDERR, *opts], builds


def note(text: str) -> None:
    print(f"conformance: note: {text}", file=sys.stderr)


def _sharing(spark: Any) -> bool:
    return "sharing" in str(spark.sparkContext._jvm.java.lang.System.getProperty("java.vm.info"))


def refused(spark: Any, archive: ClassArchive, log: str, since: int) -> bool:
    """Whether the driver JVM did not map ``archive``: it maps no class data at all
    (``java.vm.info`` without "sharing": an archive it could not even read), or it said in its
    log (``log`` after offset ``since``) that the archive failed to load (another JVM's or class
    path's: it then maps only the JDK's own base archive)."""
    if not _sharing(spark):
        return True
    try:
        with open(log, encoding="utf-8", errors="replace") as f:
            f.seek(since)
            return any("[cds" in line and str(archive.path) in line for line in f)
    except OSError:
        return False


def started(spark: Any, archive: ClassArchive, builds: bool, log: str, since: int) -> None:
    """After the driver JVM started (its log from offset ``since``): drop an archive it did
    not map; on the build run, wait at exit for the JVM to write the archive."""
    if not builds:
        if refused(spark, archive, log, since):
            archive.discard("the JVM did not map it (another JVM's or class path's, or damaged)")
            if archive.note:
                note(archive.note)
        return
    if not _sharing(spark):
        archive.finish(False)  # no base archive in this JDK: nothing to build on
        return
    atexit.register(_finish_build, spark, archive)


def _finish_build(spark: Any, archive: ClassArchive) -> None:
    """The driver JVM exits when its stdin closes (PySpark's gateway server); it writes the
    archive on the way out. Kept only when the JVM exited by itself, with 0. Spark is stopped
    first: its accumulator server would print a trace on the JVM's going."""
    code = None
    proc = spark.sparkContext._gateway.proc
    note("writing the Spark driver's class-data archive (once per JDK and Spark)")
    try:
        spark.stop()
        proc.stdin.close()
        code = proc.wait(BUILD_WAIT_S)
    except Exception:  # noqa: BLE001 (a timeout or a closed pipe: the archive is not kept)
        proc.kill()
    finally:
        archive.finish(code == 0)
