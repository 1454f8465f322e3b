"""The class-data archive of a small input's Spark driver (conformance.pipeline.driver_archive):
the first fast-starting session builds it, the next maps it; an archive the JVM cannot map is
said in one line and removed (the next run builds it again) while the command runs on. Real
JVMs, each test with a cache of its own."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.pipeline import driver_archive
from conformance.pipeline.session import driver_java_options

ROOT = Path(__file__).resolve().parents[2]

SESSION = """
from conformance.pipeline.session import spark_session
s = spark_session(fast_start=True)
jvm = s.sparkContext._jvm
print(s.range(3).count())
print(" ".join(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()))
print(jvm.java.lang.System.getProperty("java.vm.info"))
"""


def run(args: list[str], cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CONNECT_CONFORMANCE_CACHE": str(cache), "PYTHONPATH": str(ROOT),
           "CONNECT_CONFORMANCE_DRIVER_ARCHIVE": "1"}  # the tests' conftest turns it off elsewhere
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=1200)


def test_the_first_small_session_builds_the_archive_the_next_maps_it(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = run(["-c", SESSION], cache)
    assert first.returncode == 0, first.stderr[-2000:]
    count, args, _ = first.stdout.splitlines()[-3:]
    assert count == "3" and "-XX:ArchiveClassesAtExit=" in args and "SharedArchiveFile" not in args
    [archive] = (cache / "spark-driver" / "cds").glob("*.jsa")
    assert int(archive.with_suffix(".size").read_text()) == archive.stat().st_size > 0
    assert not list(archive.parent.glob("*.partial")) and not list(archive.parent.glob("*.building"))
    built = archive.stat().st_mtime_ns
    second = run(["-c", SESSION], cache)
    assert second.returncode == 0, second.stderr[-2000:]
    count, args, info = second.stdout.splitlines()[-3:]
    assert f"-XX:SharedArchiveFile={archive}" in args and "ArchiveClassesAtExit" not in args
    assert "sharing" in info  # mapped: a JDK 17 JVM that refuses the top archive maps none
    assert archive.stat().st_mtime_ns == built and "note:" not in second.stderr


@pytest.fixture(autouse=True)
def archive_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests' conftest turns the archive off for every other test."""
    monkeypatch.setenv(driver_archive.SWITCH, "1")


@pytest.mark.parametrize("value", ["0", "off"])
def test_the_switch_turns_the_archive_off(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if driver_archive.driver_archive(driver_java_options(True), {}) is None:
        pytest.skip("no java or Spark to key an archive by")
    monkeypatch.setenv(driver_archive.SWITCH, value)
    assert driver_archive.driver_archive(driver_java_options(True), {}) is None


@pytest.fixture
def foreign_archive(tmp_path: Path) -> Path:
    """A real dynamic archive of another class path: Spark's launcher run from its jar alone
    (it refuses to run without SPARK_HOME, after loading its classes from that jar). An
    archive with no class of the class path, such as a ``java -version``'s, fits any."""
    java, home = driver_archive._java(), driver_archive._spark_home()
    if java is None or home is None:
        pytest.skip("no java or Spark")
    [jar] = (home / "jars").glob("spark-launcher_*.jar")
    out = tmp_path / "foreign.jsa"
    env = {k: v for k, v in os.environ.items() if k != "SPARK_HOME"}
    subprocess.run([java, f"-XX:ArchiveClassesAtExit={out}", "-cp", str(jar),
                    "org.apache.spark.launcher.Main"], capture_output=True, timeout=300, env=env)
    assert out.stat().st_size > 0
    return out


def test_an_archive_the_jvm_cannot_map_is_said_and_dropped_and_the_audit_runs(
        tmp_path: Path, foreign_archive: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("CONNECT_CONFORMANCE_CACHE", str(cache))
    archive = driver_archive.driver_archive(driver_java_options(True), {})
    assert archive is not None
    archive.path.parent.mkdir(parents=True)
    shutil.copy(foreign_archive, archive.path)
    archive.size_record.write_text(str(archive.path.stat().st_size))  # intact, only not ours
    goldens = tmp_path / "golden"
    goldens.mkdir()
    for name in ("CLS-JOIN-31.jsonl", "CLS-SYNC-11.jsonl"):
        shutil.copy(ROOT / "fixtures" / "golden" / name, goldens / name)
    r = run(["-m", "conformance.cli", "audit", str(goldens), "--warehouse", str(tmp_path / "wh")], cache)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "0 violation(s)" in r.stdout and "Traceback" not in r.stderr + r.stdout
    notes = [line for line in r.stderr.splitlines() if "note:" in line]
    assert notes == [f"conformance: note: class-data archive {archive.path}: the JVM did not map it "
                     "(another JVM's or class path's, or damaged); not used, built again"], r.stderr
    assert not archive.path.exists() and not archive.size_record.exists()


def test_an_unreadable_archive_of_the_recorded_size_is_said_and_dropped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bytes that are no archive at all (seeded, so the same every run): the JVM maps no class
    data and runs on; the session works and the archive is gone for the next run to build."""
    import random
    cache = tmp_path / "cache"
    monkeypatch.setenv("CONNECT_CONFORMANCE_CACHE", str(cache))
    archive = driver_archive.driver_archive(driver_java_options(True), {})
    assert archive is not None
    archive.path.parent.mkdir(parents=True)
    archive.path.write_bytes(random.Random(29).randbytes(1 << 16))
    archive.size_record.write_text(str(1 << 16))
    r = run(["-c", SESSION], cache)
    assert r.returncode == 0, r.stderr[-2000:]
    count, args, info = r.stdout.splitlines()[-3:]
    assert count == "3" and f"-XX:SharedArchiveFile={archive.path}" in args and "sharing" not in info
    assert f"class-data archive {archive.path}: the JVM did not map it" in r.stderr
    assert "Traceback" not in r.stderr and not archive.path.exists()
