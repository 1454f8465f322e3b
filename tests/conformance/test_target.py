"""Target files: the bundled ones are valid; invalid ones are refused naming field and reason."""

from __future__ import annotations

import json
import re
import time
from dataclasses import replace
from pathlib import Path

import pytest

from conformance.harness.mutant_declarations import declared_mutants
from conformance.harness.target import Target, TargetError, load_target

ROOT = Path(__file__).resolve().parents[2]
GOOD = """
name = "t"
kind = "coordinator"
protocols = ["classic"]
[start]
bootstrap = "127.0.0.1:9092"
"""


@pytest.mark.parametrize("path", sorted((ROOT / "fixtures" / "targets").glob("*.toml"))
                         + [m.reference for m in declared_mutants().values()], ids=lambda p: str(getattr(p, "name", p)))
def test_bundled_targets_are_valid(path: Path) -> None:
    t = load_target(path)
    assert t.protocols and t.kind in ("coordinator", "worker")


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "target.toml"
    p.write_text(text)
    return p


def test_minimal_coordinator(tmp_path: Path) -> None:
    t = load_target(write(tmp_path, GOOD))
    assert t.bootstrap == "127.0.0.1:9092" and not t.virtual_clock
    assert t.timing.min_session_timeout_ms == 6000 and t.api_keys["ConnectGroupHeartbeat"] == 1000


@pytest.mark.parametrize("text, field, reason", [
    (GOOD.replace('kind = "coordinator"', 'kind = "broker"'), "kind", "is not one of"),
    (GOOD.replace('protocols = ["classic"]', 'protocols = ["classic", "cooperative"]'), "protocols.1", "is not one of"),
    (GOOD.replace('protocols = ["classic"]', "protocols = []"), "protocols", "should be non-empty"),
    (GOOD.replace('"127.0.0.1:9092"', '"localhost"'), "start.bootstrap", "does not match"),
    (GOOD + '[timing]\nclock = "virtual"\n', "timing.clock", "rule virtual-clock-builtin-only"),
    (GOOD + "[timing]\nmin_session_timeout_ms = 9000\nmax_session_timeout_ms = 8000\n",
     "timing.min_session_timeout_ms", "rule session-bounds-ordered"),
    (GOOD.replace('bootstrap = "127.0.0.1:9092"', 'bootstrap = "127.0.0.1:9092"\nbuiltin = "fakebroker"'),
     "start", "rule start-one-way"),
    (GOOD.replace('kind = "coordinator"', 'kind = "worker"'), "start.command", "rule kind-start-match"),
    (GOOD.replace('kind = "coordinator"', 'kind = "worker"').replace(
        'bootstrap = "127.0.0.1:9092"', 'command = "run --broker {broker} {bootstrap}"'),
     "start.command", "unknown placeholder(s) {broker}"),
    (GOOD.replace('kind = "coordinator"', 'kind = "worker"').replace(
        'bootstrap = "127.0.0.1:9092"', 'command = "run --group {group}"'), "start.command", "must contain {bootstrap}"),
    (GOOD.replace('kind = "coordinator"', 'kind = "worker"').replace(
        'bootstrap = "127.0.0.1:9092"', 'command = "run {bootstrap} [--a [{group}]]"'),
     "start.command", "nested '[' at character 21; [...] marks one optional part (rule optional-parts)"),
    (GOOD.replace('kind = "coordinator"', 'kind = "worker"').replace(
        'bootstrap = "127.0.0.1:9092"', 'command = "run {bootstrap} [--g {group}"'),
     "start.command", "a '[' is never closed"),
    (GOOD.replace('kind = "coordinator"', 'kind = "worker"').replace(
        'bootstrap = "127.0.0.1:9092"', 'command = "run {bootstrap}"\nseed_command = "seed {bootstrap}"'),
     "start.seed_command", "needs start.upstream = \"real-kafka\""),
    (GOOD.replace('kind = "coordinator"', 'kind = "worker"').replace(
        'bootstrap = "127.0.0.1:9092"',
        'command = "run {bootstrap}"\nupstream = "real-kafka"\nseed_command = "seed {bootstrap} {broker}"'),
     "start.seed_command", "unknown placeholder(s) {broker}"),
    (GOOD.replace('kind = "coordinator"', 'kind = "worker"').replace(
        'bootstrap = "127.0.0.1:9092"', 'command = "run {bootstrap} --host {worker_host}"'),
     "start.command", "{worker_host} needs start.host_command"),
    (GOOD.replace('kind = "coordinator"', 'kind = "worker"').replace(
        'bootstrap = "127.0.0.1:9092"', 'command = "run {bootstrap}"\nhost_command = "host {worker_host}"'),
     "start.command", "with a host_command, must contain {worker_host}"),
    (GOOD.replace('kind = "coordinator"', 'kind = "worker"').replace(
        'bootstrap = "127.0.0.1:9092"', 'command = "run {bootstrap} {worker_host}"\nhost_command = "host"'),
     "start.host_command", "with a host_command, must contain {worker_host}"),
    (GOOD.replace('bootstrap = "127.0.0.1:9092"', 'bootstrap = "127.0.0.1:9092"\nhost_command = "h {worker_host}"'),
     "start.host_command", "needs start.command"),
    (GOOD.replace('kind = "coordinator"', 'kind = "worker"').replace(
        'bootstrap = "127.0.0.1:9092"', 'command = "run {bootstrap} {worker_host}"\nhost_command = "h {worker_host} {group}"'),
     "start.host_command", "unknown placeholder(s) {group}; known: connect, python, worker_host"),
    (GOOD.replace('kind = "coordinator"', 'kind = "worker"').replace(
        'bootstrap = "127.0.0.1:9092"',
        'command = "run {bootstrap}"\nupstream = "real-kafka"\nseed_command = "seed {bootstrap} {group}"'),
     "start.seed_command", "unknown placeholder(s) {group}; known: bootstrap, connect, connect_protocol, python, topic_prefix"),
    (GOOD.replace('kind = "coordinator"', 'kind = "worker"').replace(
        'bootstrap = "127.0.0.1:9092"', 'command = "run {bootstrap} --connect {connect}"')
     + '[implementation]\nconnect_version = "3.0.0"\nconnect_libs = "libs"\n',
     "implementation", "connect_version and connect_libs both name the Connect build"),
    (GOOD.replace('kind = "coordinator"', 'kind = "worker"').replace(
        'bootstrap = "127.0.0.1:9092"', 'command = "run {bootstrap} --connect {connect}"')
     + '[implementation]\nconnect_version = "3.0.0"\nversion = "3.1.0"\n',
     "implementation.version", "connect_version runs Connect 3.0.0"),
    (GOOD.replace('kind = "coordinator"', 'kind = "worker"').replace(
        'bootstrap = "127.0.0.1:9092"', 'command = "run {bootstrap}"') + '[implementation]\nconnect_version = "3.0.0"\n',
     "implementation.connect_version", "no command takes {connect}"),
    (GOOD + '[implementation]\nconnect_version = "3.0"\n', "implementation.connect_version", "does not match"),
    # A coordinator's own broker: its command says where it listens in exactly one way.
    (GOOD.replace('bootstrap = "127.0.0.1:9092"', 'command = "kfake-broker"'),
     "start.command", "got none (rule broker-address-known)"),
    (GOOD.replace('bootstrap = "127.0.0.1:9092"', 'command = "b -p {port} -f {ready_file}"'),
     "start.command", "got {port}, {ready_file} (rule broker-address-known)"),
    (GOOD.replace('bootstrap = "127.0.0.1:9092"', 'command = "b -p {port}"\nready_line = "READY {bootstrap}"'),
     "start.command", "got {port}, ready_line (rule broker-address-known)"),
    (GOOD.replace('bootstrap = "127.0.0.1:9092"', 'command = "b"\nready_line = "READY"'),
     "start.ready_line", "must contain {bootstrap}"),
    (GOOD.replace('bootstrap = "127.0.0.1:9092"', 'command = "b"\nready_line = "READY {bootstrap} {port}"'),
     "start.ready_line", "and no other placeholder (rule broker-address-known)"),
    (GOOD.replace('bootstrap = "127.0.0.1:9092"', 'bootstrap = "h:1"\nready_line = "READY {bootstrap}"'),
     "start.ready_line", "needs start.command (rule broker-address-known)"),
    (GOOD.replace('bootstrap = "127.0.0.1:9092"', 'command = "b -p {port} -g {group}"'),
     "start.command", "unknown placeholder(s) {group}; known: port, python, ready_file"),
    (GOOD.replace('bootstrap = "127.0.0.1:9092"', 'command = "b -p {port}"\nupstream = "real-kafka"'),
     "start.upstream", "a coordinator target has none (rule kind-start-match)"),
    (GOOD.replace('bootstrap = "127.0.0.1:9092"', 'command = "b -p {port}"\noverlap_stops = true'),
     "start.overlap_stops", "a coordinator target has none (rule kind-start-match)"),
    (GOOD.replace('kind = "coordinator"', 'kind = "worker"').replace(
        'bootstrap = "127.0.0.1:9092"', 'command = "run {bootstrap}"\nready_line = "READY {bootstrap}"'),
     "start.ready_line", "only a coordinator's command announces its address (rule kind-start-match)"),
    (GOOD.replace('kind = "coordinator"', 'kind = "worker"').replace(
        'bootstrap = "127.0.0.1:9092"', 'command = "run {bootstrap} {port}"'),
     "start.command", "unknown placeholder(s) {port}"),
    # A broker's own rules.
    (GOOD + "[timing]\nsession_bounds = false\nmin_session_timeout_ms = 1000\n",
     "timing.min_session_timeout_ms", "declares session_bounds = false (no bounds) (rule session-bounds-ordered)"),
    (GOOD + "[timing]\nfirst_generation = -1\n", "timing.first_generation", "is less than the minimum of 0"),
    (GOOD + "[timing]\nsession_bounds = \"no\"\n", "timing.session_bounds", "is not of type 'boolean'"),
    ("colour = 1\n" + GOOD, "(top level)", "Additional properties are not allowed ('colour'"),
    (GOOD + "[api_keys]\nConnectGroupHeartbeat = 70000\n", "api_keys.ConnectGroupHeartbeat", "is greater than the maximum"),
    ("name = [", "(file)", "not valid TOML"),
    (GOOD + "[max_versions]\nJoinGrup = 5\n", "max_versions.JoinGrup", "no API of that name (e.g. JoinGroup) "
     "(rule max-versions-known)"),
    (GOOD + "[max_versions]\nJoinGroup = -1\n", "max_versions.JoinGroup", "is less than the minimum"),
    (GOOD.replace('kind = "coordinator"', 'kind = "worker"').replace(
        'bootstrap = "127.0.0.1:9092"', 'command = "run {bootstrap}"') + "[max_versions]\nJoinGroup = 5\n",
     "max_versions", "only a coordinator target caps the versions"),
])
def test_invalid_target_names_field_and_reason(tmp_path: Path, text: str, field: str, reason: str) -> None:
    with pytest.raises(TargetError) as e:
        load_target(write(tmp_path, text))
    assert any(p.startswith(field + ":") and reason in p for p in e.value.problems), e.value.problems


def test_a_brokers_own_rules_are_declared(tmp_path: Path) -> None:
    t = load_target(write(tmp_path, GOOD + "[timing]\nsession_bounds = false\nfirst_generation = 0\n"
                                           "initial_rebalance_delay_ms = 0\n"))
    assert (t.timing.session_bounds, t.timing.first_generation, t.timing.initial_rebalance_delay_ms) == (False, 0, 0)
    kafka = load_target(write(tmp_path, GOOD)).timing
    assert (kafka.session_bounds, kafka.first_generation, kafka.initial_rebalance_delay_ms) == (True, 1, 3000)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(TargetError) as e:
        load_target(tmp_path / "nope.toml")
    assert "cannot read" in str(e.value)


def test_command_rendering(tmp_path: Path) -> None:
    t = load_target(write(tmp_path, GOOD.replace('kind = "coordinator"', 'kind = "worker"').replace(
        'bootstrap = "127.0.0.1:9092"', 'command = "w --b {bootstrap} --g {group} --id {worker_id} --rest {rest_port}"')))
    assert t.render_command(bootstrap="h:1", group="g", worker_id="w1", rest_port=8083) == \
        "w --b h:1 --g g --id w1 --rest 8083"


def test_a_connect_version_is_the_build_the_commands_run_and_the_version_certified(tmp_path: Path) -> None:
    from fakebroker.realconnect.provision import CONNECT_VERSION, connect_home
    worker = GOOD.replace('kind = "coordinator"', 'kind = "worker"').replace(
        'bootstrap = "127.0.0.1:9092"', 'command = "w --connect {connect} --b {bootstrap}"')
    t = load_target(write(tmp_path, worker + '[implementation]\nconnect_version = "3.0.0"\n'))
    assert t.render_command(bootstrap="h:1") == "w --connect 3.0.0 --b h:1"
    assert t.implementation_version == "3.0.0"
    assert t.artefacts == (str(connect_home("3.0.0") / "libs" / "*.jar"),)
    bundled = load_target(write(tmp_path, worker))  # none named: the bundled release
    assert bundled.connect == bundled.implementation_version == CONNECT_VERSION


def test_optional_parts_are_left_out_only_for_unset_settings(tmp_path: Path) -> None:
    """``[...]`` lets the suite leave a setting to the worker's own default (CONN-CFG-*)."""
    t = load_target(write(tmp_path, GOOD.replace('kind = "coordinator"', 'kind = "worker"').replace(
        'bootstrap = "127.0.0.1:9092"',
        'command = "w {bootstrap} [--p {connect_protocol}] --s {session_timeout_ms} [--fixed x]"')))
    assert t.can_leave_unset("connect_protocol")
    assert not t.can_leave_unset("session_timeout_ms") and not t.can_leave_unset("group")
    values = dict(bootstrap="h:1", connect_protocol="eager", session_timeout_ms=6000)
    assert t.render_command(**values) == "w h:1 --p eager --s 6000 --fixed x"
    assert t.render_command(unset=frozenset({"connect_protocol"}), **values) == "w h:1  --s 6000 --fixed x"
    with pytest.raises(ValueError, match="always sets session_timeout_ms"):
        t.render_command(unset=frozenset({"session_timeout_ms"}), **values)


def seed_target(tmp_path: Path, seed: str) -> Target:
    return load_target(write(tmp_path, GOOD.replace('kind = "coordinator"', 'kind = "worker"').replace(
        'bootstrap = "127.0.0.1:9092"',
        f'command = "w {{bootstrap}}"\nupstream = "real-kafka"\nseed_command = {json.dumps(seed)}')))


def test_the_seed_command_is_rendered_and_run_to_its_exit(tmp_path: Path) -> None:
    from conformance.harness.worker import run_seed_command
    out = tmp_path / "seeded"
    # (No brackets in the script: [...] marks an optional part of a command template.)
    t = seed_target(tmp_path, "{python} -c 'import sys; a = sys.argv; a.pop(0); f = a.pop(0); "
                              "open(f, \"w\").write(\" \".join(a))' "
                              f"{out} {{bootstrap}} {{topic_prefix}} [--p {{connect_protocol}}]")
    assert t.render_seed_command(bootstrap="h:1", topic_prefix="pre", connect_protocol="eager",
                                 python="py").startswith("py -c ")
    run_seed_command(t, "h:1", "pre")
    assert out.read_text() == f"h:1 pre --p {t.connect_protocol}"


def test_a_failing_seed_command_names_itself_and_its_output(tmp_path: Path) -> None:
    from conformance.harness.worker import run_seed_command
    t = seed_target(tmp_path, "{python} -c 'import sys; print(\"no such topic\"); sys.exit(3)' {bootstrap}")
    with pytest.raises(RuntimeError, match=r"(?s)the seed command .* exited 3:.*no such topic"):
        run_seed_command(t, "h:1", "pre")


def host_target(tmp_path: Path, host: str) -> Target:
    return load_target(write(tmp_path, GOOD.replace('kind = "coordinator"', 'kind = "worker"').replace(
        'bootstrap = "127.0.0.1:9092"',
        f'command = "w {{bootstrap}} --host {{worker_host}}"\nhost_command = {json.dumps(host)}')))


# A host that listens on its socket, as `python -m fakebroker.realconnect host` does (no JVM here).
LISTENING_HOST = ("{python} -c 'import socket, sys, time; s = socket.socket(socket.AF_UNIX); "
                  "s.bind(sys.argv.pop()); s.listen(); time.sleep(300)' {worker_host}")


def test_the_host_command_runs_until_stopped_and_its_socket_fills_worker_host(tmp_path: Path) -> None:
    from conformance.harness.worker_host import start_worker_host
    from fakebroker.realconnect.host import listening
    t = host_target(tmp_path, LISTENING_HOST)
    host = start_worker_host(t)
    try:
        assert listening(host.socket_path) and host.proc.poll() is None
        rendered = t.render_command(bootstrap="h:1", worker_host=host.socket_path)
        assert rendered == f"w h:1 --host {host.socket_path}"
    finally:
        host.stop(timeout_s=10)
    assert host.proc.poll() is not None
    assert not host.directory.exists()


def test_a_host_that_exits_first_names_its_command_and_output(tmp_path: Path) -> None:
    from conformance.harness.worker_host import start_worker_host
    t = host_target(tmp_path, "{python} -c 'import sys; print(\"no JVM here\"); sys.exit(4)' {worker_host}")
    with pytest.raises(RuntimeError, match=r"(?s)the worker host .* exited \(4\) before listening .*no JVM here"):
        start_worker_host(t)


def test_a_host_that_never_listens_is_given_up_within_its_bound(tmp_path: Path) -> None:
    from conformance.harness.worker_host import start_worker_host
    t = host_target(tmp_path, "{python} -c 'import time; time.sleep(300)' {worker_host}")
    t = replace(t, timing=replace(t.timing, startup_timeout_s=1.0, wait_scale=1.0))
    started = time.monotonic()
    with pytest.raises(RuntimeError, match=r"did not listen on .* within 1s"):
        start_worker_host(t)
    assert time.monotonic() - started < 30


def test_a_mutant_is_named_by_reference_and_a_bad_declaration_by_file_mutant_field_and_rule(tmp_path: Path) -> None:
    from conformance.harness.mutant_declarations import DeclarationError
    with pytest.raises(TargetError) as e:
        load_target("mutant:no-such-defect")
    assert e.value.problems == ["mutant:no-such-defect: no mutant of that name is declared in "
                                "fixtures/mutants/*.toml (rule mutant-known)"]
    for body, says in (('[x]\nbase = "fakebroker"\ndefect = "d"\nrefused_by = "CLS-HB-01"\ncolour = 1\n',
                        "workers.toml: [x].colour: not a mutant field"),
                       ('[x]\nbase = "fakebroker"\ndefect = "d"\n', "workers.toml: [x].refused_by: every mutant names it"),
                       ('[x]\nbase = "nope"\ndefect = "d"\nrefused_by = "CLS-HB-01"\n',
                        "workers.toml: [x].base: no bundled target fixtures/targets/nope.toml")):
        (tmp_path / "workers.toml").write_text(body)
        (tmp_path / "coordinators.toml").write_text("")
        with pytest.raises(DeclarationError, match=re.escape(says)):
            declared_mutants(tmp_path)
