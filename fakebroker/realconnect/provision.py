"""Apache Kafka Connect 4.2.0's runtime jars, resolved once from Maven Central.

``fakebroker/realconnect/pom.xml`` (shipped in the wheel) lists connect-runtime,
connect-json and connect-file; Maven's ``dependency:copy-dependencies`` copies them and
their runtime dependencies into ``~/.cache/connect-conformance/connect-<version>/libs``
(beside the broker's ``kafka-<version>/libs``; never into the repository). A stamp records
the POM's digest and the jars, so a later run is offline and a changed POM resolves again. Maven is tried offline
(the local ~/.m2 repository) before Maven Central.
"""

from __future__ import annotations

from pathlib import Path

from ..realkafka import provision as kp
from ..realkafka.provision import ResolveFailed, find_java, find_maven  # noqa: F401 - re-exported

CONNECT_VERSION = "4.2.0"
POM = Path(__file__).with_name("pom.xml")
STAMP = "resolved.json"
REQUIRED_JARS = ("connect-runtime-", "connect-json-", "connect-file-", "kafka-clients-",
                 "log4j-slf4j2-impl-")


def connect_home(version: str = CONNECT_VERSION) -> Path:
    return kp.cache_root() / f"connect-{version}"


def cached_libs(version: str = CONNECT_VERSION, pom: Path = POM) -> Path | None:
    return kp.cached_jars(connect_home(version), pom, REQUIRED_JARS)


def ensure_resolved(*, version: str = CONNECT_VERSION, pom: Path = POM, quiet: bool = True) -> Path:
    """The directory of the worker's runtime jars, resolving them first when needed."""
    libs = cached_libs(version, pom)
    if libs is not None:
        return libs
    if not pom.is_file():
        raise ResolveFailed(f"{pom} is missing: it lists the Connect worker's jars")
    return kp.resolve_jars(name="connect", product="Kafka Connect", version=version, pom=pom,
                           required=REQUIRED_JARS, quiet=quiet)
