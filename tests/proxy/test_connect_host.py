"""Many Apache Kafka Connect 4.2.0 workers in one JVM (fakebroker.realconnect.host), against
the fake broker in proxy mode in front of a real Kafka: each worker joins and leaves as a
worker in a JVM of its own does, writes its own log, and one that stops, vanishes, exits or
cannot start leaves the host serving the next."""

from __future__ import annotations

import time
import urllib.error
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from fakebroker.realconnect import ConnectWorker, WorkerSettings
from fakebroker.realconnect.host import HostFailed, WorkerHost
from fakebroker.server.acl import AclRule, Acls, Operation, ResourceType
from fakebroker.server.authorize import Authorizer

from .conftest import unique

pytestmark = pytest.mark.realkafka


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WorkerHost]:
    d = tmp_path_factory.mktemp("host")
    h = WorkerHost(d / "host.sock", str(d / "host.log")).start()
    yield h
    h.stop()
    assert not (d / "host.sock").exists()


def wait_for(fn: Callable[[], Any], what: str, timeout_s: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        out = fn()
        if out:
            return out
        time.sleep(0.2)  # a real worker on real time; the bound is the deadline
    raise AssertionError(f"timed out waiting for {what}")


def members(proxy: Any, group: str) -> set[str]:
    """Client ids of the group's members while it is stable, else an empty set."""
    def read() -> set[str]:
        g = proxy.broker.coordinator.classic_group(group)
        if g is None or g.state.name.lower() != "stable":
            return set()
        return {m.client_id for m in g.members.values()}
    return proxy.run(read)


def hosted(host: WorkerHost, bootstrap: str, group: str, name: str, tmp_path: Path) -> ConnectWorker:
    return ConnectWorker(WorkerSettings(bootstrap=bootstrap, group=group, client_id=name, host=str(host.socket_path),
                                        log_file=str(tmp_path / f"{name}.log")))


def answers(worker: ConnectWorker) -> bool:
    try:
        return "version" in worker.get("/", timeout_s=2)
    except (OSError, ValueError, urllib.error.URLError):
        return False


def test_two_workers_in_one_jvm_join_one_group_each_with_its_own_log(real_kafka, proxy_factory, host,
                                                                     tmp_path: Path) -> None:
    proxy = proxy_factory(real_kafka.bootstrap)
    group = unique("hosted")
    a = hosted(host, proxy.bootstrap, group, "worker-a", tmp_path).start()
    b = hosted(host, proxy.bootstrap, group, "worker-b", tmp_path).start()
    try:
        assert a.proc is None and b.proc is None  # no JVM of their own
        wait_for(lambda: members(proxy, group) == {"worker-a", "worker-b"}, "both workers in the group")
        for me, other in (("worker-a", "worker-b"), ("worker-b", "worker-a")):
            log = (tmp_path / f"{me}.log").read_text()
            assert f"clientId={me}, groupId={group}" in log
            assert f"clientId={other}" not in log  # the other's lines went to its own log
        a.stop()
        # It left as a stopping worker leaves (LeaveGroup: no session timeout to wait for).
        wait_for(lambda: members(proxy, group) == {"worker-b"}, "worker-a to leave", timeout_s=20)
        assert not answers(a) and answers(b)
    finally:
        a.stop()
        b.stop()
    assert host.proc is not None and host.proc.poll() is None


def test_a_worker_whose_client_vanishes_is_stopped(real_kafka, proxy_factory, host, tmp_path: Path) -> None:
    proxy = proxy_factory(real_kafka.bootstrap)
    group = unique("vanishing")
    w = hosted(host, proxy.bootstrap, group, "worker-v", tmp_path).start()
    try:
        wait_for(lambda: members(proxy, group) == {"worker-v"}, "the worker in the group")
        assert w.hosted is not None
        w.hosted.conn.close()  # as when the process holding the connection is killed
        wait_for(lambda: not answers(w), "its REST server to stop", timeout_s=30)
        wait_for(lambda: members(proxy, group) == set() or proxy.run(
            lambda: not proxy.broker.coordinator.classic_group(group).members), "it to leave", timeout_s=30)
    finally:
        w.hosted = None
        w.stop()


def test_a_worker_that_exits_is_reported_and_the_host_serves_the_next(real_kafka, proxy_factory, host,
                                                                      tmp_path: Path) -> None:
    """Connect 4.2.0's herder calls Exit.exit(1) when its group is refused (a fatal
    GroupAuthorizationException): its own JVM would exit; here the worker is stopped and its
    client told its code, and the host goes on."""
    proxy = proxy_factory(real_kafka.bootstrap)
    refused = unique("refused")
    rules = tuple(AclRule(True, "User:*", Operation.ALL, r, "*") for r in ResourceType) + (
        AclRule(False, "User:*", Operation.ALL, ResourceType.GROUP, refused),)

    def refuse() -> None:
        proxy.broker.authorizer = Authorizer(Acls(rules), proxy.broker.registry, proxy.broker.config)
    proxy.run(refuse)
    w = hosted(host, proxy.bootstrap, refused, "worker-x", tmp_path)
    try:
        w.start()
        assert w.hosted is not None
        code = wait_for(w.hosted.poll, "the worker to exit", timeout_s=60)
    except Exception as e:  # it may exit before its REST server answered: start() says so
        assert "exited with 1" in str(e), e
        code = 1
    finally:
        w.stop()
    assert code == 1
    assert "called Exit.exit(1)" in Path(str(w.log_path)).read_text()
    fine = unique("after-exit")
    n = hosted(host, proxy.bootstrap, fine, "worker-n", tmp_path).start()
    try:
        wait_for(lambda: members(proxy, fine) == {"worker-n"}, "the next worker in its group")
    finally:
        n.stop()


def test_a_worker_that_cannot_start_fails_with_the_reason(real_kafka, host, tmp_path: Path) -> None:
    w = ConnectWorker(WorkerSettings(bootstrap=real_kafka.bootstrap, group=unique("bad"), host=str(host.socket_path),
                                     log_file=str(tmp_path / "bad.log"), properties={"connect.protocol": "nonsense"}))
    with pytest.raises(HostFailed, match=r"did not start the worker: .*ConfigException.*nonsense"):
        w.start()
    assert "Stopping due to error" in (tmp_path / "bad.log").read_text()
    assert host.proc is not None and host.proc.poll() is None
