"""Provisioning a real Apache Kafka broker without a download step the package registries
cannot serve: the broker's jars come from Maven Central through Maven, once, into a cache
directory; the JVM comes from the machine.

    libs = ensure_resolved()   # no Maven call when the cache already matches pom.xml
    java = find_java()         # Java 17+ (Kafka 4.x's broker needs it)

The cache lives outside the repository (nothing of Kafka's is committed):
``$CONNECT_CONFORMANCE_CACHE`` or ``${XDG_CACHE_HOME:-~/.cache}/connect-conformance``, then
``kafka-<version>/libs``. A stamp file records the POM it was resolved from, so a changed
POM resolves again and an unchanged one never calls Maven (offline after the first run).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..cache_dir import cache_root, locked

KAFKA_VERSION = "4.2.0"
POM = Path(__file__).with_name("pom.xml")
#: Jars the launcher cannot run without; their absence means a broken cache.
REQUIRED_JARS = (f"kafka_2.13-{KAFKA_VERSION}.jar", f"kafka-server-{KAFKA_VERSION}.jar",
                 f"kafka-clients-{KAFKA_VERSION}.jar", f"kafka-group-coordinator-{KAFKA_VERSION}.jar",
                 "log4j-core-", "log4j-slf4j2-impl-", "scala-library-")
STAMP = "resolved.json"
MIN_JAVA = 17
RESOLVE_TIMEOUT_S = 900.0


class RealKafkaError(RuntimeError):
    """A real broker could not be provisioned, started or stopped. The message names the
    cause and what to do about it."""


class JavaMissing(RealKafkaError):
    pass


class ResolveFailed(RealKafkaError):
    pass


def kafka_home(version: str = KAFKA_VERSION) -> Path:
    return cache_root() / f"kafka-{version}"


def libs_dir(version: str = KAFKA_VERSION) -> Path:
    return kafka_home(version) / "libs"


def pom_digest(pom: Path = POM) -> str:
    return hashlib.sha256(pom.read_bytes()).hexdigest()


# ---------------------------------------------------------------------------- Java


@dataclass(frozen=True)
class Java:
    path: str
    version: str  # e.g. "17.0.15"
    major: int


def _java_candidates() -> list[str]:
    out = []
    for var in ("REAL_KAFKA_JAVA", "JAVA_HOME"):
        val = os.environ.get(var)
        if val:
            p = Path(val)
            out.append(str(p if var == "REAL_KAFKA_JAVA" else p / "bin" / "java"))
    found = shutil.which("java")
    if found:
        out.append(found)
    return out


def _java_version(java: str) -> tuple[str | None, str]:
    """The version ``java -version`` names (or None, and why not). Remembered per binary (its
    real path, size and modification time) in the cache directory: every Kafka and Connect
    worker start asks, and each ``-version`` is a JVM start (~0.07 s of CPU; 0.5-1 s on a
    loaded machine, before the worker's own JVM could start)."""
    real = os.path.realpath(java)
    st = os.stat(real)
    key = hashlib.sha256(f"{real}\0{st.st_size}\0{st.st_mtime_ns}".encode()).hexdigest()[:24]
    known = cache_root() / "java-versions" / key
    try:
        return known.read_text(encoding="utf-8"), ""
    except OSError:
        pass
    res = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    m = re.search(r'version "([^"]+)"', res.stderr + res.stdout)
    if res.returncode != 0 or not m:
        return None, (res.stderr or res.stdout).strip()
    try:
        known.parent.mkdir(parents=True, exist_ok=True)
        tmp = known.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(m.group(1), encoding="utf-8")
        os.replace(tmp, known)  # whole, for a process reading it at the same time
    except OSError:  # a read-only cache: ask again next time
        pass
    return m.group(1), ""


def find_java(minimum: int = MIN_JAVA) -> Java:
    """The ``java`` to run the broker with: ``$REAL_KAFKA_JAVA``, ``$JAVA_HOME/bin/java``,
    then ``java`` on PATH; it must be Java ``minimum`` or newer."""
    tried = []
    for cand in _java_candidates():
        if not (os.path.isfile(cand) and os.access(cand, os.X_OK)):
            tried.append(f"{cand} (not an executable file)")
            continue
        try:
            version, failed = _java_version(cand)
        except (OSError, subprocess.TimeoutExpired) as e:
            tried.append(f"{cand} ({e})")
            continue
        if version is None:
            tried.append(f"{cand} (`-version` failed: {failed[:200]})")
            continue
        head = version.split(".")
        major = int(head[1] if head[0] == "1" and len(head) > 1 else re.sub(r"\D.*", "", head[0]) or 0)
        if major < minimum:
            tried.append(f"{cand} (Java {version}, too old)")
            continue
        return Java(cand, version, major)
    where = "; ".join(tried) if tried else "no java on PATH and JAVA_HOME unset"
    raise JavaMissing(
        f"no usable Java runtime: Apache Kafka {KAFKA_VERSION}'s broker needs Java {minimum} or "
        f"newer ({where}). Install one (Debian: apt-get install openjdk-17-jre-headless) or point "
        f"JAVA_HOME (or REAL_KAFKA_JAVA, a java binary) at one.")


# ---------------------------------------------------------------------------- Maven


def find_maven() -> str:
    explicit = os.environ.get("REAL_KAFKA_MVN")
    mvn = explicit or shutil.which("mvn")
    if not mvn:
        raise ResolveFailed(
            f"Maven (mvn) is needed once to fetch Apache Kafka {KAFKA_VERSION}'s jars from Maven "
            f"Central into {libs_dir()}, and none is on PATH. Install it (Debian: apt-get install "
            f"maven) or set REAL_KAFKA_MVN; or fill that directory by hand and add {STAMP} "
            f"(see `python -m fakebroker.realkafka resolve --help`).")
    return mvn


def cached_jars(home: Path, pom: Path, required: tuple[str, ...]) -> Path | None:
    """``home/libs`` if it holds a complete resolve of ``pom`` (its stamp names the POM's
    digest and jars, all present, ``required`` among them), else None."""
    libs = home / "libs"
    try:
        stamp = json.loads((home / STAMP).read_text())
    except (OSError, ValueError):
        return None
    if stamp.get("pom_sha256") != pom_digest(pom):
        return None
    jars = stamp.get("jars") or []
    if not jars or not all((libs / j).is_file() for j in jars):
        return None
    if not all(any(j.startswith(req) for j in jars) for req in required):
        return None
    return libs


def cached_libs(version: str = KAFKA_VERSION, pom: Path = POM) -> Path | None:
    """The libs directory if it holds a complete resolve of this POM, else None."""
    return cached_jars(kafka_home(version), pom, REQUIRED_JARS)


def _run_maven(mvn: str, pom: Path, out: Path, offline: bool, log: Path) -> subprocess.CompletedProcess[str]:
    cmd = [mvn, "-B", "-Dstyle.color=never", "-f", str(pom), *(["-o"] if offline else []),
           "dependency:copy-dependencies", f"-DoutputDirectory={out}", "-DincludeScope=runtime"]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=RESOLVE_TIMEOUT_S,
                             cwd=str(out.parent))
    except subprocess.TimeoutExpired:
        raise ResolveFailed(f"Maven did not finish resolving Kafka's jars within {RESOLVE_TIMEOUT_S:.0f}s "
                            f"(`{' '.join(cmd)}`): is Maven Central reachable?") from None
    except OSError as e:
        raise ResolveFailed(f"cannot run Maven ({mvn}): {e}") from None
    log.write_text(f"$ {' '.join(cmd)}\n{res.stdout}\n{res.stderr}")
    return res


def _maven_failure(res: subprocess.CompletedProcess[str]) -> str:
    lines = [ln for ln in (res.stdout + res.stderr).splitlines() if "[ERROR]" in ln]
    return "\n".join(lines[:8]) or (res.stdout + res.stderr).strip()[-1500:]


def resolve_jars(*, name: str, product: str, version: str, pom: Path, required: tuple[str, ...],
                 quiet: bool = True) -> Path:
    """``<cache>/<name>-<version>/libs``, the runtime jars ``pom`` lists, resolving them first if
    the cache does not hold this POM's resolve (stamped with ``<name>_version``). Tries Maven
    offline (the local ~/.m2 repository) before going to Maven Central. ``product`` names
    them in messages; ``python -m fakebroker.real<name> resolve`` is the command to retry."""
    home = cache_root() / f"{name}-{version}"
    libs = cached_jars(home, pom, required)
    if libs is not None:
        return libs
    with locked(home):  # one resolver at a time per cache
        libs = cached_jars(home, pom, required)  # another process may have resolved meanwhile
        if libs is not None:
            return libs
        mvn = find_maven()
        staging = Path(tempfile.mkdtemp(prefix="libs-", dir=home))
        log = home / "resolve.log"
        try:
            if not quiet:
                print(f"[real{name}] resolving {product} {version} jars into {home / 'libs'}",
                      flush=True)
            res = _run_maven(mvn, pom, staging, True, log)
            if res.returncode != 0:
                shutil.rmtree(staging, ignore_errors=True)
                staging.mkdir()
                res = _run_maven(mvn, pom, staging, False, log)
            if res.returncode != 0:
                raise ResolveFailed(
                    f"Maven could not resolve {product} {version}'s jars (exit {res.returncode}):\n"
                    f"{_maven_failure(res)}\nFull log: {log}. Check that Maven Central is reachable "
                    f"(proxy settings in ~/.m2/settings.xml) and retry "
                    f"`python -m fakebroker.real{name} resolve`.")
            jars = sorted(p.name for p in staging.glob("*.jar"))
            missing = [r for r in required if not any(j.startswith(r) for j in jars)]
            if missing:
                raise ResolveFailed(f"Maven's resolve lacks {', '.join(missing)} (got {len(jars)} jars; "
                                    f"log: {log}): is {pom} intact?")
            target = home / "libs"
            if target.exists():
                shutil.rmtree(target)
            staging.rename(target)
            (home / STAMP).write_text(json.dumps(
                {f"{name}_version": version, "pom_sha256": pom_digest(pom), "jars": jars}, indent=1) + "\n")
            return target
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)


def ensure_resolved(*, version: str = KAFKA_VERSION, pom: Path = POM, quiet: bool = True) -> Path:
    """The directory of the broker's runtime jars, resolving them first if the cache does
    not hold this POM's resolve."""
    return resolve_jars(name="kafka", product="Apache Kafka", version=version, pom=pom,
                        required=REQUIRED_JARS, quiet=quiet)
