"""Apache Kafka Connect's runtime jars: a release resolved once from Maven Central, or the
jars of a user's own build (a directory).

``connect_build("3.0.0")`` renders ``fakebroker/realconnect/pom.xml`` (a template, shipped in the wheel: connect-runtime,
connect-json and connect-file of that version, and the logging binding it needs) into
``~/.cache/connect-conformance/connect-<version>/pom.xml``, and Maven's
``dependency:copy-dependencies`` copies them and their runtime dependencies into
``connect-<version>/libs`` beside it (never into the repository). A stamp records the
rendered POM's digest and the jars, so a later run is offline and a changed POM resolves
again. Maven is tried offline (the local ~/.m2 repository) before Maven Central.
``connect_build("/path/to/libs")`` takes a directory of jars as it is (a fork, a snapshot).

Logging: Connect before 4.0 logs through log4j 1 (its ``/admin/loggers`` REST resource calls
log4j 1's API directly; KIP-495), so those versions get slf4j 1 bound to reload4j (log4j
1.2's maintained drop-in); from 4.0 on Connect uses log4j2 (KIP-653), bound through
log4j-slf4j2-impl. Either way the worker's log is written, evidence for every case.

``CONNECT_VERSION`` is the one place the bundled targets' default version is named; a
target names another with ``[implementation] connect_version`` (or ``connect_libs``).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from ..realkafka import provision as kp
from ..realkafka.provision import ResolveFailed, find_java, find_maven  # noqa: F401 - re-exported

CONNECT_VERSION = "4.2.0"
TEMPLATE = Path(__file__).with_name("pom.xml")  # shipped in the wheel
VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:-[A-Za-z0-9.]+)?$")
BASE_JARS = ("connect-runtime-", "connect-json-", "connect-file-", "kafka-clients-")
LOG4J2_JARS = ("log4j-core-", "log4j-slf4j2-impl-")
LOG4J1_JARS = ("reload4j-", "slf4j-reload4j-")

# What a release before 4.0 gets instead of the template's log4j2 binding: slf4j 1 with
# reload4j, and connect-runtime's own log4j 1 / slf4j-log4j12 (2.x-3.1 bring them through
# kafka-log4j-appender) left out, so one binding is on the class path.
_LOG4J1_PROPERTIES = """\
    <reload4j.version>1.2.25</reload4j.version>
    <slf4j.version>1.7.36</slf4j.version>
"""
_LOG4J1_DEPENDENCIES = """\
    <dependency>
      <groupId>org.slf4j</groupId>
      <artifactId>slf4j-reload4j</artifactId>
      <version>${slf4j.version}</version>
    </dependency>
    <dependency>
      <groupId>ch.qos.reload4j</groupId>
      <artifactId>reload4j</artifactId>
      <version>${reload4j.version}</version>
    </dependency>
"""
_RUNTIME_EXCLUSIONS = """\
      <artifactId>connect-runtime</artifactId>
      <version>${kafka.version}</version>
      <exclusions>
        <exclusion><groupId>log4j</groupId><artifactId>log4j</artifactId></exclusion>
        <exclusion><groupId>org.slf4j</groupId><artifactId>slf4j-log4j12</artifactId></exclusion>
      </exclusions>
"""


def version_key(version: str) -> tuple[int, int, int]:
    m = VERSION.match(version)
    if m is None:
        raise ValueError(f"{version!r} is not a Connect version (expected MAJOR.MINOR.PATCH, e.g. 3.0.0)")
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def logs_with_log4j2(version: str) -> bool:
    """Connect 4.0 moved from log4j 1 to log4j2 (KIP-653)."""
    return version_key(version) >= (4, 0, 0)


def _replace_once(text: str, pattern: str, new: str) -> str:
    out, n = re.subn(pattern, lambda _: new, text, count=1, flags=re.S)
    if n != 1:
        raise ResolveFailed(f"{TEMPLATE}: no match for {pattern!r}: is the template intact?")
    return out


def pom_text(version: str) -> str:
    """The POM resolving ``version``. For 4.x it is byte for byte the POM this template
    replaced, so a cache resolved from that stays valid."""
    text = TEMPLATE.read_text(encoding="utf-8").replace("@VERSION@", version)
    if logs_with_log4j2(version):
        return text
    text = _replace_once(text, r"pinned to what the \S+ distribution's libs/ holds \(slf4j 2 with log4j's "
                               r"slf4j2 binding\)\.",
                         "slf4j 1 bound to reload4j (log4j 1.2): Connect before 4.0 calls log4j 1 itself.")
    text = _replace_once(text, r"    <log4j\.version>.*?</slf4j\.version>\n", _LOG4J1_PROPERTIES)
    text = _replace_once(text, r"      <artifactId>connect-runtime</artifactId>\n      <version>\$\{kafka\.version\}</version>\n",
                         _RUNTIME_EXCLUSIONS)
    return _replace_once(text, r"    <dependency>\n      <groupId>org\.apache\.logging\.log4j</groupId>\n"
                               r"      <artifactId>log4j-slf4j2-impl</artifactId>.*?</dependency>\n"
                               r"    <dependency>\n      <groupId>org\.apache\.logging\.log4j</groupId>.*?</dependency>\n",
                         _LOG4J1_DEPENDENCIES)


@dataclass(frozen=True)
class ConnectBuild:
    """The jars one Connect worker runs from, and what they need."""

    version: str   # a release, or what the build's connect-runtime jar names
    libs: Path
    home: Path     # the cache directory for what is derived from these jars (class archive, host)
    log4j2: bool   # logs through log4j2 (else log4j 1)

    @property
    def hostable(self) -> bool:
        """Whether its workers can run in the worker host (``host``): the host tells one
        worker's log from another's by log4j2's ThreadContext."""
        return self.log4j2

    @property
    def not_hostable_reason(self) -> str:
        return (f"Connect {self.version} logs through log4j 1, and the worker host routes each worker's "
                f"log by log4j2's ThreadContext: each worker runs in a JVM of its own")


def connect_home(version: str = CONNECT_VERSION) -> Path:
    return kp.cache_root() / f"connect-{version}"


def required_jars(version: str) -> tuple[str, ...]:
    return BASE_JARS + (LOG4J2_JARS if logs_with_log4j2(version) else LOG4J1_JARS)


def _rendered_pom(version: str) -> Path:
    """``connect-<version>/pom.xml``, written when it differs from the template's rendering."""
    pom = connect_home(version) / "pom.xml"
    text = pom_text(version)
    try:
        if pom.read_text(encoding="utf-8") == text:
            return pom
    except OSError:
        pass
    pom.parent.mkdir(parents=True, exist_ok=True)
    tmp = pom.with_suffix(f".{hashlib.sha256(text.encode()).hexdigest()[:8]}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(pom)
    return pom


def cached_libs(version: str = CONNECT_VERSION) -> Path | None:
    return kp.cached_jars(connect_home(version), _rendered_pom(version), required_jars(version))


def ensure_resolved(*, version: str = CONNECT_VERSION, quiet: bool = True) -> Path:
    """The directory of ``version``'s runtime jars, resolving them first when needed."""
    if not TEMPLATE.is_file():
        raise ResolveFailed(f"{TEMPLATE} is missing: it lists the Connect worker's jars")
    pom = _rendered_pom(version)
    libs = kp.cached_jars(connect_home(version), pom, required_jars(version))
    if libs is not None:
        return libs
    return kp.resolve_jars(name="connect", product="Kafka Connect", version=version, pom=pom,
                           required=required_jars(version), quiet=quiet)


def _build_of_directory(libs: Path) -> ConnectBuild:
    jars = sorted(p.name for p in libs.glob("*.jar"))
    runtime = [j for j in jars if j.startswith("connect-runtime-") and not j.endswith(("-tests.jar", "-test.jar"))]
    if not runtime:
        raise ResolveFailed(f"{libs}: no connect-runtime-<version>.jar: not a directory of Connect's jars")
    missing = [r for r in BASE_JARS if not any(j.startswith(r) for j in jars)]
    if missing:
        raise ResolveFailed(f"{libs}: lacks {', '.join(j + '*.jar' for j in missing)}")
    version = runtime[0].removeprefix("connect-runtime-").removesuffix(".jar")
    if not VERSION.match(version):
        raise ResolveFailed(f"{libs}: {runtime[0]} names no version MAJOR.MINOR.PATCH[-QUALIFIER]")
    log4j2 = all(any(j.startswith(r) for j in jars) for r in LOG4J2_JARS)
    if not log4j2 and not any(j.startswith(("reload4j-", "log4j-1.")) for j in jars):
        raise ResolveFailed(f"{libs}: no logging binding among its jars (log4j-core and log4j-slf4j2-impl, "
                            f"or reload4j and slf4j-reload4j): the worker's log is the evidence of a run")
    digest = hashlib.sha256(str(libs.resolve()).encode()).hexdigest()[:12]
    return ConnectBuild(version, libs, kp.cache_root() / f"connect-build-{digest}", log4j2)


def build_version(spec: str | None) -> str:
    """The version ``spec`` (as for ``connect_build``) names, without resolving anything."""
    spec = spec or CONNECT_VERSION
    if VERSION.match(spec):
        return spec
    libs = Path(spec).expanduser()
    if not libs.is_dir():
        raise ResolveFailed(f"--connect {spec}: neither a version (MAJOR.MINOR.PATCH) nor a directory of jars")
    return _build_of_directory(libs).version


def connect_build(spec: str | None = None, *, quiet: bool = True) -> ConnectBuild:
    """``spec``: a release (``3.0.0``, resolved from Maven Central once), a directory of jars,
    or None (``CONNECT_VERSION``). ResolveFailed says what is wrong."""
    spec = spec or CONNECT_VERSION
    if VERSION.match(spec):
        libs = ensure_resolved(version=spec, quiet=quiet)
        return ConnectBuild(spec, libs, connect_home(spec), logs_with_log4j2(spec))
    libs = Path(spec).expanduser()
    if not libs.is_dir():
        raise ResolveFailed(f"--connect {spec}: neither a version (MAJOR.MINOR.PATCH) nor a directory of jars")
    return _build_of_directory(libs)
