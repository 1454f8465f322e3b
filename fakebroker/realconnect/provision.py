"""Apache Kafka Connect 4.2.0's runtime jars, resolved once from Maven Central.

``fixtures/connect/pom.xml`` lists connect-runtime, connect-json and connect-file; Maven's
``dependency:copy-dependencies`` copies them and their runtime dependencies into
``~/.cache/connect-conformance/connect-<version>/libs`` (beside the broker's
``kafka-<version>/libs``; never into the repository). A stamp records the POM's digest and
the jars, so a later run is offline and a changed POM resolves again. Maven is tried offline
(the local ~/.m2 repository) before Maven Central.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from ..realkafka import provision as kp
from ..realkafka.provision import ResolveFailed, find_java, find_maven  # noqa: F401 - re-exported

CONNECT_VERSION = "4.2.0"
POM = Path(__file__).resolve().parents[2] / "fixtures" / "connect" / "pom.xml"
STAMP = "resolved.json"
REQUIRED_JARS = ("connect-runtime-", "connect-json-", "connect-file-", "kafka-clients-",
                 "log4j-slf4j2-impl-")


def connect_home(version: str = CONNECT_VERSION) -> Path:
    return kp.cache_root() / f"connect-{version}"


def cached_libs(version: str = CONNECT_VERSION, pom: Path = POM) -> Path | None:
    libs = connect_home(version) / "libs"
    try:
        stamp = json.loads((connect_home(version) / STAMP).read_text())
    except (OSError, ValueError):
        return None
    jars = stamp.get("jars") or []
    if stamp.get("pom_sha256") != kp.pom_digest(pom) or not jars:
        return None
    if not all((libs / j).is_file() for j in jars):
        return None
    if not all(any(j.startswith(r) for j in jars) for r in REQUIRED_JARS):
        return None
    return libs


def ensure_resolved(*, version: str = CONNECT_VERSION, pom: Path = POM, quiet: bool = True) -> Path:
    """The directory of the worker's runtime jars, resolving them first when needed."""
    libs = cached_libs(version, pom)
    if libs is not None:
        return libs
    if not pom.is_file():
        raise ResolveFailed(f"{pom} is missing: it lists the Connect worker's jars")
    home = connect_home(version)
    with kp._locked(home):
        libs = cached_libs(version, pom)
        if libs is not None:
            return libs
        mvn = find_maven()
        staging = Path(tempfile.mkdtemp(prefix="libs-", dir=home))
        log = home / "resolve.log"
        try:
            if not quiet:
                print(f"[realconnect] resolving Kafka Connect {version} jars into {home / 'libs'}",
                      flush=True)
            res = kp._run_maven(mvn, pom, staging, True, log)
            if res.returncode != 0:
                shutil.rmtree(staging, ignore_errors=True)
                staging.mkdir()
                res = kp._run_maven(mvn, pom, staging, False, log)
            if res.returncode != 0:
                raise ResolveFailed(
                    f"Maven could not resolve Kafka Connect {version}'s jars (exit {res.returncode}):\n"
                    f"{kp._maven_failure(res)}\nFull log: {log}. Check that Maven Central is "
                    f"reachable and retry `python -m fakebroker.realconnect resolve`.")
            jars = sorted(p.name for p in staging.glob("*.jar"))
            missing = [r for r in REQUIRED_JARS if not any(j.startswith(r) for j in jars)]
            if missing:
                raise ResolveFailed(f"Maven's resolve lacks {', '.join(missing)} (log: {log})")
            target = home / "libs"
            if target.exists():
                shutil.rmtree(target)
            staging.rename(target)
            (home / STAMP).write_text(json.dumps(
                {"connect_version": version, "pom_sha256": kp.pom_digest(pom), "jars": jars},
                indent=1) + "\n")
            return target
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)
