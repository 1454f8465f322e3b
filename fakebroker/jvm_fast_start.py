"""JVM options that start a short-lived JVM (a Connect worker, a small audit's Spark driver) in seconds instead of 10-20.

A certification starts one worker per case, so its start-up (JVM, classes, JIT) is most of
a run's time. The worker's group behaviour does not depend on any of these:

- ``-XX:TieredStopAtLevel=1``: the C1 compiler only. C2's background compilations take a
  second core for tens of seconds while the worker starts; a worker here runs no load
  for which C2's code would pay off.
- ``-XX:+UseSerialGC``: one GC thread; on a 2-core machine G1's threads compete with
  the worker's own (and with the other worker of a case).
- Application class-data sharing (JDK 13+ dynamic archive): the worker's loaded classes,
  parsed and verified, mapped from a file instead of read from 60 jars. The archive is
  built once, at the exit of the first worker started without one
  (``-XX:ArchiveClassesAtExit``), into the cache beside the jars
  (``~/.cache/connect-conformance/connect-<version>/cds/<key>.jsa``); the key digests
  the JVM and the jars (names, sizes, times), so a JVM or jar change builds a new
  archive. One process at a time builds it (a lock file); an archive is only kept when its
  JVM had started and exited by itself after dumping it (a JVM killed mid-dump leaves a
  partial file, removed). The archive's size is recorded beside it (``<key>.size``): a JDK 17
  JVM mapping a truncated archive dies of SIGBUS, so an archive of another size than it was
  written with is removed and built again. A JVM that cannot use an archive otherwise (another
  JVM's or another class path's) warns in its log and runs without it (``-Xshare:auto``, the
  default).
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

FLAGS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
LOCK_STALE_S = 600.0  # a builder that died without removing its lock
DUMP_STOP_TIMEOUT_S = 90.0  # writing the archive at exit takes a few seconds, more under load


def archive_key(java: str, libs: Path, extra: str = "") -> str:
    """Digest of what a dynamic archive is only valid for: the JVM, the class path (the jars,
    and ``extra``: the worker host's classes), the flags."""
    h = hashlib.sha256()
    real_java = os.path.realpath(java)
    h.update(f"{real_java}\0{os.stat(real_java).st_mtime_ns}\0{' '.join(FLAGS)}\0".encode())
    if extra:
        h.update(f"{extra}\0".encode())
    for jar in sorted(libs.glob("*.jar")):
        st = jar.stat()
        h.update(f"{jar.name}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    return h.hexdigest()[:16]


@dataclass
class ClassArchive:
    """The worker's class-data archive at ``path``: use it, or build it at this JVM's exit."""

    path: Path
    note: str | None = None  # why an archive found here was not used, when it was not
    _used: tuple[int, int] | None = None  # (inode, mtime) of the archive handed to a JVM

    @property
    def lock(self) -> Path:
        return self.path.with_suffix(".building")

    @property
    def size_record(self) -> Path:
        return self.path.with_suffix(".size")

    @property
    def partial(self) -> Path:
        return self.path.with_suffix(f".{os.getpid()}.partial")

    def jvm_options(self) -> tuple[list[str], bool]:
        """The options for the next JVM, and whether it builds the archive (then call
        ``finish`` once it exited)."""
        try:
            st = self.path.stat()
        except OSError:
            st = None
        if st is not None:
            if st.st_size == self._recorded_size():
                self._used = (st.st_ino, st.st_mtime_ns)
                return [f"-XX:SharedArchiveFile={self.path}"], False
            self._remove(f"{st.st_size} bytes, not the size it was written with")
        if self._take_lock():
            return [f"-XX:ArchiveClassesAtExit={self.partial}"], True
        return [], False  # another process builds it: start without

    def _take_lock(self) -> bool:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            if time.time() - self.lock.stat().st_mtime > LOCK_STALE_S:
                for left in self.path.parent.glob(f"{self.path.stem}.*.partial"):
                    left.unlink(missing_ok=True)
                self.lock.unlink(missing_ok=True)
        except OSError:
            pass
        try:
            os.close(os.open(self.lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            return True
        except FileExistsError:
            return False

    def _recorded_size(self) -> int | None:
        try:
            return int(self.size_record.read_text())
        except (OSError, ValueError):
            return None

    def _remove(self, why: str) -> None:
        self.note = f"class-data archive {self.path}: {why}; not used, built again"
        self.path.unlink(missing_ok=True)
        self.size_record.unlink(missing_ok=True)

    def discard(self, why: str) -> None:
        """The JVM did not map the archive it was given: remove it (unless another process
        has replaced it meanwhile), so that the next JVM builds it again."""
        try:
            st = self.path.stat()
        except OSError:
            return
        if self._used == (st.st_ino, st.st_mtime_ns):
            self._remove(why)

    def finish(self, complete: bool) -> None:
        """Keep the dumped archive when ``complete``: the JVM had started (its classes are a
        running worker's) and exited by itself after writing it, not killed while writing.
        Its size is recorded first: an archive is only used beside its own size."""
        try:
            if complete and self.partial.is_file():
                record = self.size_record.with_suffix(f".{os.getpid()}.size")
                record.write_text(str(self.partial.stat().st_size))
                os.replace(record, self.size_record)
                os.replace(self.partial, self.path)
        finally:
            self.partial.unlink(missing_ok=True)
            self.lock.unlink(missing_ok=True)


def class_archive(home: Path, java: str, libs: Path, extra: str = "") -> ClassArchive:
    return ClassArchive(home / "cds" / f"{archive_key(java, libs, extra)}.jsa")
