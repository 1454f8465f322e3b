"""Provisioning without a JVM: Java and Maven discovery, the resolve cache, backend choice,
the broker's configuration. Each bad input gives a message naming the cause and the fix."""

from __future__ import annotations

import json
import socket
import stat
import threading
import time
from pathlib import Path

import pytest

from fakebroker.realkafka import JavaMissing, KafkaSettings, ResolveFailed, choose_backend, provision
from fakebroker.realkafka.docker_backend import DockerKafka, docker_unavailable, env_name


def script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def no_java(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.delenv("REAL_KAFKA_JAVA", raising=False)
    monkeypatch.setenv("CONNECT_CONFORMANCE_CACHE", str(tmp_path / "cache"))  # versions it remembers
    return empty


# ---------------------------------------------------------------------------- Java


def test_missing_java_names_the_cause_and_the_fix(no_java: Path) -> None:
    with pytest.raises(JavaMissing) as e:
        provision.find_java()
    msg = str(e.value)
    assert "Java 17 or newer" in msg and "JAVA_HOME" in msg and "apt-get install" in msg


def test_java_home_pointing_nowhere(no_java: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-such-jdk"))
    with pytest.raises(JavaMissing, match="no-such-jdk/bin/java \\(not an executable file\\)"):
        provision.find_java()


def test_too_old_java_is_refused(no_java: Path) -> None:
    script(no_java / "java", "echo 'openjdk version \"11.0.22\" 2024-01-16' >&2\n")
    with pytest.raises(JavaMissing, match=r"Java 11\.0\.22, too old"):
        provision.find_java()


def test_java_8_version_scheme(no_java: Path) -> None:
    script(no_java / "java", "echo 'java version \"1.8.0_392\"' >&2\n")
    with pytest.raises(JavaMissing, match="too old"):
        provision.find_java()


def test_java_17_is_found(no_java: Path) -> None:
    script(no_java / "java", "echo 'openjdk version \"17.0.15\" 2025-04-15' >&2\n")
    j = provision.find_java()
    assert (j.major, j.version) == (17, "17.0.15")


def test_the_version_is_asked_once_per_binary(no_java: Path) -> None:
    """A Java's version is remembered by the binary's path, size and time: one JVM start to ask,
    not one per worker; a changed binary is asked again, a refused one every time."""
    runs = no_java / "runs"
    java = no_java / "java"
    script(java, f"echo run >> {runs}\necho 'openjdk version \"17.0.15\" 2025-04-15' >&2\n")
    assert provision.find_java().version == provision.find_java().version == "17.0.15"
    assert runs.read_text().count("run") == 1
    script(java, f"echo run >> {runs}\necho 'openjdk version \"21.0.4\" 2024-07-16' >&2 # longer\n")
    assert provision.find_java().version == "21.0.4"
    assert runs.read_text().count("run") == 2
    script(java, f"echo run >> {runs}\necho 'no version here' >&2\nexit 1\n")
    for _ in range(2):
        with pytest.raises(JavaMissing, match="no version here"):
            provision.find_java()
    assert runs.read_text().count("run") == 4


# ---------------------------------------------------------------------------- Maven and the cache


@pytest.fixture
def cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("CONNECT_CONFORMANCE_CACHE", str(root))
    return root


def test_missing_maven(cache: Path, no_java: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REAL_KAFKA_MVN", raising=False)
    with pytest.raises(ResolveFailed) as e:
        provision.ensure_resolved()
    assert "Maven (mvn) is needed once" in str(e.value) and "apt-get install maven" in str(e.value)


def test_failed_resolve_shows_mavens_errors(cache: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    mvn = script(tmp_path / "mvn", f"echo \"$@\" >> {calls}\n"
                 "echo '[ERROR] Failed to execute goal: Could not resolve dependencies: "
                 "org.apache.kafka:kafka_2.13:jar:4.2.0 was not found'\nexit 1\n")
    monkeypatch.setenv("REAL_KAFKA_MVN", str(mvn))
    with pytest.raises(ResolveFailed) as e:
        provision.ensure_resolved()
    msg = str(e.value)
    assert "Could not resolve dependencies" in msg and "Maven Central is reachable" in msg
    assert "resolve.log" in msg
    # First offline (the local repository), then online.
    lines = calls.read_text().splitlines()
    assert len(lines) == 2 and " -o " in lines[0] and " -o " not in lines[1]
    assert not (cache / "kafka-4.2.0" / "libs").exists()  # nothing half-done is left


def fake_maven_that_copies(tmp_path: Path, jars: list[str], calls: Path) -> Path:
    touch = " ".join(f'"$out/{j}"' for j in jars)
    return script(tmp_path / "mvn", f"echo run >> {calls}\n"
                  "for a in \"$@\"; do case $a in -DoutputDirectory=*) out=${a#-DoutputDirectory=};; esac; done\n"
                  f"touch {touch}\n")


GOOD_JARS = ["kafka_2.13-4.2.0.jar", "kafka-server-4.2.0.jar", "kafka-clients-4.2.0.jar",
             "kafka-group-coordinator-4.2.0.jar", "log4j-core-2.25.3.jar",
             "log4j-slf4j2-impl-2.25.3.jar", "scala-library-2.13.17.jar"]


def test_resolve_is_cached_and_offline_after_the_first(cache: Path, monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    monkeypatch.setenv("REAL_KAFKA_MVN", str(fake_maven_that_copies(tmp_path, GOOD_JARS, calls)))
    libs = provision.ensure_resolved()
    assert sorted(p.name for p in libs.iterdir()) == sorted(GOOD_JARS)
    stamp = json.loads((cache / "kafka-4.2.0" / "resolved.json").read_text())
    assert stamp["pom_sha256"] == provision.pom_digest()
    assert provision.ensure_resolved() == libs
    assert calls.read_text().count("run") == 1  # the second call did not run Maven
    # A jar gone missing is a broken cache: resolved again.
    (libs / "kafka-server-4.2.0.jar").unlink()
    assert provision.cached_libs() is None
    provision.ensure_resolved()
    assert calls.read_text().count("run") == 2


def test_changed_pom_resolves_again(cache: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    monkeypatch.setenv("REAL_KAFKA_MVN", str(fake_maven_that_copies(tmp_path, GOOD_JARS, calls)))
    provision.ensure_resolved()
    pom = tmp_path / "pom.xml"
    pom.write_text(provision.POM.read_text().replace("<version>4.2.0</version>", "<version>4.2.0</version><!-- -->", 1))
    assert provision.cached_libs(pom=pom) is None
    provision.ensure_resolved(pom=pom)
    assert calls.read_text().count("run") == 2


def test_incomplete_resolve_is_refused(cache: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    monkeypatch.setenv("REAL_KAFKA_MVN", str(fake_maven_that_copies(tmp_path, ["kafka-clients-4.2.0.jar"], calls)))
    with pytest.raises(ResolveFailed, match="lacks kafka_2.13-4.2.0.jar"):
        provision.ensure_resolved()


def test_pom_pins_the_broker() -> None:
    pom = provision.POM.read_text()
    assert "<artifactId>kafka_2.13</artifactId>" in pom
    assert f"<kafka.version>{provision.KAFKA_VERSION}</kafka.version>" in pom
    assert "log4j-slf4j2-impl" in pom


# ---------------------------------------------------------------------------- backend choice


def test_no_docker_engine_is_detected_fast(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("REAL_KAFKA_BOOTSTRAP", raising=False)
    monkeypatch.delenv("REAL_KAFKA_BACKEND", raising=False)
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/docker.sock")
    t0 = time.monotonic()
    backend, why = choose_backend()
    assert time.monotonic() - t0 < 1.0
    assert backend == "process" and "no Docker engine" in why and "docker.sock" in why


def test_a_listening_but_silent_socket_is_bounded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = str(tmp_path / "d.sock")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(1)
    try:
        t0 = time.monotonic()
        monkeypatch.setenv("DOCKER_HOST", f"unix://{path}")
        assert docker_unavailable(timeout_s=0.3) is not None
        assert time.monotonic() - t0 < 2.0
    finally:
        srv.close()


def test_an_answering_engine_selects_docker(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = str(tmp_path / "d.sock")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(1)

    def answer() -> None:
        conn, _ = srv.accept()
        conn.recv(1024)
        conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nOK")
        conn.close()

    t = threading.Thread(target=answer, daemon=True)
    t.start()
    monkeypatch.delenv("REAL_KAFKA_BOOTSTRAP", raising=False)
    monkeypatch.delenv("REAL_KAFKA_BACKEND", raising=False)
    monkeypatch.setenv("DOCKER_HOST", f"unix://{path}")
    try:
        assert choose_backend() == ("docker", f"a Docker engine answers at unix://{path}")
    finally:
        t.join(5)
        srv.close()


def test_backend_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REAL_KAFKA_BACKEND", "process")
    assert choose_backend()[0] == "process"
    monkeypatch.setenv("REAL_KAFKA_BACKEND", "auto")
    monkeypatch.setenv("REAL_KAFKA_BOOTSTRAP", "127.0.0.1:1")
    assert choose_backend()[0] == "external"
    monkeypatch.setenv("REAL_KAFKA_BACKEND", "kubernetes")
    with pytest.raises(Exception, match="expected one of auto, process, docker, external"):
        choose_backend()


# ---------------------------------------------------------------------------- configuration


def test_server_properties() -> None:
    s = KafkaSettings(initial_rebalance_delay_ms=250, properties={"group.max.size": 3, "listeners": "x"})
    p = s.server_properties(host="127.0.0.1", port=1111, controller_host="127.0.0.1",
                            controller_port=2222, log_dir="/d")
    assert p["listeners"] == "PLAINTEXT://127.0.0.1:1111,CONTROLLER://127.0.0.1:2222"
    assert p["controller.quorum.voters"] == "1@127.0.0.1:2222"
    assert p["process.roles"] == "broker,controller"
    assert (p["group.initial.rebalance.delay.ms"], p["group.min.session.timeout.ms"]) == ("250", "1000")
    assert p["offsets.topic.replication.factor"] == "1" and p["group.max.size"] == "3"
    assert p["log.dirs"] == "/d"


def test_container_environment() -> None:
    assert env_name("group.initial.rebalance.delay.ms") == "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS"
    assert env_name("a_b-c.d") == "KAFKA_A__B___C_D"
    # On the host's network, loopback only: what it binds is what it advertises.
    env = DockerKafka(KafkaSettings()).container_env(40000, 40001)
    assert env["KAFKA_LISTENERS"] == "PLAINTEXT://127.0.0.1:40000,CONTROLLER://127.0.0.1:40001"
    assert env["KAFKA_ADVERTISED_LISTENERS"] == "PLAINTEXT://127.0.0.1:40000"
    assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"] == "1@127.0.0.1:40001"
    assert env["KAFKA_PROCESS_ROLES"] == "broker,controller" and "CLUSTER_ID" in env
    assert "KAFKA_LOG_DIRS" not in env  # the image's own


def test_the_local_image_reads_the_environment_as_the_apache_image_does() -> None:
    """kafka_entrypoint's rule is env_name's inverse; no property given: the image's defaults."""
    from fakebroker.containers.kafka_entrypoint import DEFAULTS, properties, property_name
    for prop in ("group.initial.rebalance.delay.ms", "a_b-c.d", "listener.security.protocol.map"):
        assert property_name(env_name(prop)) == prop
    env = DockerKafka(KafkaSettings()).container_env(40000, 40001)
    props = properties(env)
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:40000,CONTROLLER://127.0.0.1:40001"
    assert "heap.opts" not in props and props["log.dirs"] == "/tmp/kraft-combined-logs"
    assert properties({"CLUSTER_ID": "x"}) == {**DEFAULTS, "log.dirs": "/tmp/kraft-combined-logs"}


def test_cli_doctor_runs(capsys: pytest.CaptureFixture[str]) -> None:
    from fakebroker.realkafka.__main__ import main
    assert main(["doctor"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["kafka_version"] == "4.2.0" and "backend" in report



def test_cluster_ids_never_start_with_a_dash() -> None:
    """A cluster id "-abc..." would be read as an option by the storage tool's parser."""
    from fakebroker.realkafka.launcher import new_cluster_id
    ids = [new_cluster_id() for _ in range(2000)]
    assert all(len(i) == 22 and not i.startswith("-") for i in ids)
