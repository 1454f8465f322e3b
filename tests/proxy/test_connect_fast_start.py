"""The Connect worker's class-data archive (fakebroker.jvm_fast_start): one builder at a
time, kept only when complete, keyed by the JVM and the jars. No JVM runs here."""

from __future__ import annotations

import os
import time
from pathlib import Path

from fakebroker.jvm_fast_start import LOCK_STALE_S, ClassArchive, archive_key, class_archive


def fake_libs(tmp_path: Path) -> tuple[str, Path]:
    java = tmp_path / "java"
    java.write_text("#!/bin/sh\n")
    libs = tmp_path / "libs"
    libs.mkdir()
    (libs / "a.jar").write_bytes(b"a")
    (libs / "b.jar").write_bytes(b"bb")
    return str(java), libs


def test_the_first_jvm_builds_the_archive_the_others_wait_then_use_it(tmp_path: Path) -> None:
    java, libs = fake_libs(tmp_path)
    archive = class_archive(tmp_path / "home", java, libs)
    opts, builds = archive.jvm_options()
    assert builds and opts == [f"-XX:ArchiveClassesAtExit={archive.partial}"]
    assert archive.jvm_options() == ([], False)  # the lock is taken: start without
    archive.partial.write_bytes(b"dumped")  # what the JVM writes at its exit
    archive.finish(True)
    assert archive.path.read_bytes() == b"dumped"
    assert not archive.partial.exists() and not archive.lock.exists()
    assert archive.jvm_options() == ([f"-XX:SharedArchiveFile={archive.path}"], False)


def test_an_incomplete_dump_is_dropped_and_the_next_jvm_builds_again(tmp_path: Path) -> None:
    java, libs = fake_libs(tmp_path)
    archive = class_archive(tmp_path / "home", java, libs)
    assert archive.jvm_options()[1]
    archive.partial.write_bytes(b"half")
    archive.finish(False)  # killed while writing, or never started
    assert not archive.path.exists() and not archive.partial.exists()
    assert archive.jvm_options()[1]


def test_a_stale_lock_of_a_dead_builder_is_taken_over(tmp_path: Path) -> None:
    java, libs = fake_libs(tmp_path)
    archive = ClassArchive(tmp_path / "cds" / "k.jsa")
    assert archive.jvm_options()[1]
    left = archive.path.with_suffix(".999999.partial")
    left.write_bytes(b"left by a killed builder")
    assert not archive.jvm_options()[1]
    old = time.time() - LOCK_STALE_S - 1
    os.utime(archive.lock, (old, old))
    assert archive.jvm_options()[1]
    assert not left.exists()


def test_the_key_changes_with_the_jars(tmp_path: Path) -> None:
    java, libs = fake_libs(tmp_path)
    before = archive_key(java, libs)
    assert archive_key(java, libs) == before
    (libs / "b.jar").write_bytes(b"bbb")
    changed = archive_key(java, libs)
    assert changed != before
    (libs / "c.jar").write_bytes(b"c")
    assert archive_key(java, libs) not in (before, changed)


def test_an_archive_of_another_size_than_written_is_removed_and_built_again(tmp_path: Path) -> None:
    """A JDK 17 JVM mapping a truncated archive dies of SIGBUS: only an archive of its
    recorded size is handed to a JVM; any other is removed, said, and built again."""
    java, libs = fake_libs(tmp_path)
    archive = class_archive(tmp_path / "home", java, libs)
    assert archive.jvm_options()[1]
    archive.partial.write_bytes(b"dumped")
    archive.finish(True)
    assert archive.size_record.read_text() == "6"
    archive.path.chmod(0o644)
    archive.path.write_bytes(b"dump")  # truncated
    again = class_archive(tmp_path / "home", java, libs)
    opts, builds = again.jvm_options()
    assert builds and opts == [f"-XX:ArchiveClassesAtExit={again.partial}"]
    assert again.note and "4 bytes, not the size it was written with" in again.note
    assert not again.path.exists() and not again.size_record.exists()


def test_an_archive_without_its_size_record_is_not_used(tmp_path: Path) -> None:
    java, libs = fake_libs(tmp_path)
    archive = class_archive(tmp_path / "home", java, libs)
    archive.path.parent.mkdir(parents=True)
    archive.path.write_bytes(b"copied in from elsewhere")
    assert archive.jvm_options()[1] and archive.note


def test_a_refused_archive_is_discarded_unless_replaced_meanwhile(tmp_path: Path) -> None:
    """``discard``: the JVM did not map the archive it was given; another process may have
    built a new one at the same path since, which stays."""
    java, libs = fake_libs(tmp_path)
    first = class_archive(tmp_path / "home", java, libs)
    assert first.jvm_options()[1]
    first.partial.write_bytes(b"dumped")
    first.finish(True)
    user = class_archive(tmp_path / "home", java, libs)
    assert user.jvm_options() == ([f"-XX:SharedArchiveFile={user.path}"], False)
    other = class_archive(tmp_path / "home", java, libs)
    assert other.jvm_options()[0]
    other.discard("refused")
    assert not other.path.exists() and other.note
    rebuilt = class_archive(tmp_path / "home", java, libs)
    assert rebuilt.jvm_options()[1]
    rebuilt.partial.write_bytes(b"dumped again")
    rebuilt.finish(True)
    user.discard("refused")  # the archive it was given is gone: the new one stays
    assert user.path.read_bytes() == b"dumped again" and user.note is None
