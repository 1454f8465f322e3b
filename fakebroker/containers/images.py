"""Images the project builds itself, for engines that cannot pull (no registry reachable):

- ``BASE``: Debian (bookworm, ``debootstrap --variant=minbase``) with Debian's OpenJDK 17
  JRE and Python 3, made into an image with ``docker import`` of that root filesystem;
- ``kafka_image()``: Apache Kafka's jars (the ones ``fakebroker.realkafka`` resolves from
  Maven Central) on that base, configured as the ``apache/kafka`` image documents
  (``KAFKA_*`` environment variables as server properties, ``CLUSTER_ID``) by
  ``kafka_entrypoint.py``; tagged as the project's own, never the official name;
- ``fakebroker_image()``: the repository's ``Dockerfile`` with that base.

Each carries ``INPUTS_LABEL``, a hash of what it is made from, and is reused while that hash
matches (a build once per machine; the first build is measured in bench/README.md). Builds
in several processes at once wait for one another (a file lock), so the first builds and the
others reuse.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from ..cache_dir import cache_root, locked
from .engine import INPUTS_LABEL, EngineError, client, one_line

HERE = Path(__file__).resolve().parent
DEBIAN_SUITE = "bookworm"
BASE_PACKAGES = ("openjdk-17-jre-headless", "python3", "python3-venv", "ca-certificates")
BASE = f"connect-conformance/debian:{DEBIAN_SUITE}-jre17-py3"
FAKEBROKER_IMAGE = "connect-conformance/fakebroker:local"
#: The base's Python (bookworm's python3) and the wheels that run on it (glibc 2.36).
BASE_PYTHON = "3.11"
WHEEL_PLATFORMS = tuple(f"{tag}_{platform.machine()}" for tag in (
    "manylinux_2_28", "manylinux_2_17", "manylinux2014", "manylinux_2_5", "manylinux1", "linux"))
DEBOOTSTRAP_TIMEOUT_S = 1200
BUILD_TIMEOUT_S = 900
#: What the fake broker's image is built from (the wheel's inputs and the Dockerfile).
FAKEBROKER_INPUTS = ("Dockerfile", ".dockerignore", "pyproject.toml", "README.md",
                     "fakebroker", "conformance", "schemas", "fixtures/golden")

Log = Callable[[str], None]


def _stderr(msg: str) -> None:
    print(f"[images] {msg}", file=sys.stderr, flush=True)


def kafka_image_tag(version: str) -> str:
    return f"connect-conformance/kafka:{version}-local"


def debian_mirror() -> str:
    return os.environ.get("CONNECT_CONFORMANCE_DEBIAN_MIRROR", "http://deb.debian.org/debian")


def digest(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode() if isinstance(p, str) else p)
        h.update(b"\0")
    return h.hexdigest()[:16]


def tree_digest(root: Path, names: tuple[str, ...]) -> str:
    """Paths and contents of the files under ``names`` (bytecode left out)."""
    parts: list[bytes | str] = []
    for name in names:
        top = root / name
        files = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
        for p in files:
            if "__pycache__" in p.parts or p.suffix == ".pyc":
                continue
            parts += [str(p.relative_to(root)), p.read_bytes()]
    return digest(*parts)


def _build_lock() -> AbstractContextManager[None]:
    return locked(cache_root() / "images")


def _run(cmd: list[str], what: str, timeout_s: float) -> None:
    """``cmd``, bounded; its failure an EngineError naming ``what`` and its last line."""
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise EngineError(f"{what} did not finish within {timeout_s:.0f} s") from None
    if res.returncode != 0:
        tail = (res.stderr or res.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise EngineError(f"{what} failed (exit {res.returncode}): {tail[0]}")


def _tagged(c: Any, tag: str) -> Any | None:
    import docker
    try:
        return c.images.get(tag)
    except docker.errors.ImageNotFound:
        return None


def _made_from(image: Any, inputs: str) -> bool:
    return (image.labels or {}).get(INPUTS_LABEL) == inputs


def drop_stale(c: Any, tag: str, inputs: str) -> None:
    """The image ``tag`` names when it is stale: removed before its replacement is made, so
    rebuilds leave no untagged images behind (kept while a container still uses it)."""
    import docker
    image = _tagged(c, tag)
    if image is not None and not _made_from(image, inputs):
        try:
            c.images.remove(image.id)
        except docker.errors.APIError:
            pass


def current(c: Any, tag: str, inputs: str) -> Any | None:
    """The image ``tag`` when it was made from ``inputs``; None when missing or stale."""
    image = _tagged(c, tag)
    return image if image is not None and _made_from(image, inputs) else None


def base_inputs() -> str:
    return digest(DEBIAN_SUITE, "minbase", *BASE_PACKAGES)


def ensure_base(c: Any, log: Log = _stderr) -> str:
    """The base image's id: reused, or made with debootstrap and ``docker import``."""
    inputs = base_inputs()
    found = current(c, BASE, inputs)
    if found is not None:
        return str(found.id)
    # /usr/sbin is not on every user's PATH
    debootstrap = shutil.which("debootstrap") or shutil.which("debootstrap", path="/usr/sbin")
    if debootstrap is None:
        raise EngineError("cannot make the Debian base image: debootstrap is not installed "
                          "(Debian package debootstrap; .ci/setup.sh installs it as root)")
    if os.geteuid() != 0:
        raise EngineError("cannot make the Debian base image: debootstrap needs root")
    drop_stale(c, BASE, inputs)
    t0 = time.monotonic()
    log(f"making {BASE} with debootstrap from {debian_mirror()} (once per machine)")
    with tempfile.TemporaryDirectory(prefix="cc-rootfs-") as tmp:
        root = Path(tmp) / "root"
        cmd = [debootstrap, "--variant=minbase", f"--include={','.join(BASE_PACKAGES)}",
               DEBIAN_SUITE, str(root), debian_mirror()]
        _run(cmd, "debootstrap", DEBOOTSTRAP_TIMEOUT_S)
        for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for p in (root / junk).glob("*"):
                if p.is_file():
                    p.unlink()
        tar = Path(tmp) / "rootfs.tar"
        subprocess.run(["tar", "-C", str(root), "--numeric-owner", "-cf", str(tar), "."],
                       check=True, capture_output=True)
        repo, tag = BASE.split(":")
        c.api.import_image_from_file(str(tar), repository=repo, tag=tag, changes=[
            f"LABEL {INPUTS_LABEL}={inputs}", "ENV LANG=C.UTF-8"])
    found = current(c, BASE, inputs)
    if found is None:
        raise EngineError(f"docker import did not leave {BASE} behind")
    log(f"made {BASE} in {time.monotonic() - t0:.1f} s")
    return str(found.id)


def _build(c: Any, context: Path, tag: str, inputs: str, *, dockerfile: str = "Dockerfile",
           buildargs: dict[str, str] | None = None, log: Log = _stderr) -> str:
    import docker
    drop_stale(c, tag, inputs)
    t0 = time.monotonic()
    log(f"building {tag}")
    try:
        image, _ = c.images.build(path=str(context), dockerfile=dockerfile, tag=tag, rm=True,
                                  forcerm=True, network_mode="host", buildargs=buildargs or {},
                                  labels={INPUTS_LABEL: inputs}, timeout=BUILD_TIMEOUT_S)
    except docker.errors.BuildError as e:
        lines = [str(x.get("stream") or x.get("error") or "").strip() for x in e.build_log]
        raise EngineError(f"building {tag} failed: {e.msg}; last output: "
                          f"{next((x for x in reversed(lines) if x), '')[:300]}") from None
    except Exception as e:  # noqa: BLE001 - the engine went away, a timeout
        raise EngineError(f"building {tag} failed: {one_line(e)}") from None
    log(f"built {tag} in {time.monotonic() - t0:.1f} s")
    return str(image.id)


KAFKA_DOCKERFILE = """\
# Apache Kafka {version} from its Maven Central jars on the project's Debian base.
ARG BASE
FROM ${{BASE}}
COPY libs/ /opt/kafka/libs/
COPY kafka_entrypoint.py log4j2.properties /opt/kafka/
# Unprivileged, as the apache/kafka image; its data under /tmp/kraft-combined-logs.
USER 65534
EXPOSE 9092
ENTRYPOINT ["python3", "/opt/kafka/kafka_entrypoint.py"]
"""

def kafka_image(libs: Path, version: str, log4j2: str, log: Log = _stderr) -> str:
    """The local Kafka image's tag, built when missing or when its inputs changed; ``log4j2``
    is the broker's logging configuration (the local process's, to the console)."""
    c = client()
    jars = sorted(libs.glob("*.jar"))
    if not jars:
        raise EngineError(f"no Kafka jars in {libs} (python -m fakebroker.realkafka resolve)")
    entry = (HERE / "kafka_entrypoint.py").read_bytes()
    dockerfile = KAFKA_DOCKERFILE.format(version=version)
    tag = kafka_image_tag(version)
    with _build_lock():
        base = ensure_base(c, log)
        inputs = digest(base, dockerfile, entry, log4j2,
                        *(f"{j.name}:{j.stat().st_size}" for j in jars))
        if current(c, tag, inputs) is not None:
            return tag
        with tempfile.TemporaryDirectory(prefix="cc-kafka-image-") as tmp:
            ctx = Path(tmp)
            (ctx / "libs").mkdir()
            for j in jars:
                try:  # a hard link where the cache and /tmp share a file system
                    os.link(j, ctx / "libs" / j.name)
                except OSError:
                    shutil.copy2(j, ctx / "libs" / j.name)
            (ctx / "kafka_entrypoint.py").write_bytes(entry)
            (ctx / "log4j2.properties").write_text(log4j2)
            (ctx / "Dockerfile").write_text(dockerfile)
            _build(c, ctx, tag, inputs, buildargs={"BASE": base}, log=log)
    return tag


def stage_wheels(root: Path, dest: Path, python: str = BASE_PYTHON) -> None:
    """The package's wheel and its dependencies' for the base's Python, fetched by this
    machine's pip (its index, proxy and certificates): the image's build then needs no
    network of its own."""
    import tomllib
    deps = tomllib.loads((root / "pyproject.toml").read_text())["project"]["dependencies"]
    pip = [sys.executable, "-m", "pip", "--quiet"]
    for cmd in ([*pip, "wheel", "--no-deps", "--wheel-dir", str(dest), str(root)],
                [*pip, "download", "--dest", str(dest), "--only-binary=:all:", "--python-version", python,
                 "--implementation", "cp", *(f"--platform={p}" for p in WHEEL_PLATFORMS), *deps]):
        _run(cmd, f"staging the fake broker's wheels (pip {cmd[4]})", BUILD_TIMEOUT_S)


def fakebroker_image(root: Path, log: Log = _stderr) -> str:
    """The fake broker's image from the checkout at ``root`` (its Dockerfile) on the
    project's base; built when missing or when the checkout changed."""
    if not (root / "Dockerfile").is_file():
        raise EngineError(f"{root}: no Dockerfile (the fake broker's image builds from a checkout)")
    c = client()
    with _build_lock():
        base = ensure_base(c, log)
        inputs = digest(base, tree_digest(root, FAKEBROKER_INPUTS))
        if current(c, FAKEBROKER_IMAGE, inputs) is not None:
            return FAKEBROKER_IMAGE
        with tempfile.TemporaryDirectory(prefix="cc-fakebroker-image-") as tmp:
            ctx = Path(tmp)
            for name in FAKEBROKER_INPUTS:
                src, dst = root / name, ctx / name
                dst.parent.mkdir(parents=True, exist_ok=True)
                if src.is_dir():
                    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
                else:
                    shutil.copy2(src, dst)
            stage_wheels(root, ctx / "wheels")
            _build(c, ctx, FAKEBROKER_IMAGE, inputs, log=log, buildargs={
                "BASE": base, "PACKAGE": "connect-conformance",
                "PIP_OPTIONS": "--no-index --find-links /src/wheels"})
    return FAKEBROKER_IMAGE
