"""The command-line edges of issue 27, each as a user meets it: every command's --version,
help texts without reST markup and with a help line for every option, replay's hint that
works when followed, an Allure hint for pip users, and kafka-python's import-time warnings left out."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from fakebroker import __version__

ROOT = Path(__file__).resolve().parents[1]
FAKEBROKER = ROOT / "fixtures" / "targets" / "fakebroker.toml"
REST_MARKUP = re.compile(r"``|:[a-z]+:`")


def parsers() -> dict[str, argparse.ArgumentParser]:
    import conformance.cli
    import fakebroker.cli
    import fakebroker.realconnect.__main__ as realconnect
    import fakebroker.realkafka.__main__ as realkafka
    return {"conformance": conformance.cli.build_parser(), "fakebroker": fakebroker.cli.build_parser(),
            "fakebroker.realconnect": realconnect.parser(), "fakebroker.realkafka": realkafka.parser()}


def walk(parser: argparse.ArgumentParser, path: str) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from walk(sub, f"{path} {name}")


@pytest.mark.parametrize("module", ["fakebroker.realconnect", "fakebroker.realkafka", "conformance.cli",
                                    "fakebroker.cli"])
def test_every_command_has_version(module: str) -> None:
    r = subprocess.run([sys.executable, "-m", module, "--version"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip().endswith(f"(connect-conformance) {__version__}"), r


def test_help_texts_are_plain_and_every_option_is_explained() -> None:
    raw, unexplained = [], []
    for root, parser in parsers().items():
        for path, p in walk(parser, root):
            if REST_MARKUP.search(p.format_help()):
                raw.append(path)
            unexplained += [f"{path} {a.option_strings[-1]}" for a in p._actions
                            if a.option_strings and not a.help]
    assert raw == [] and unexplained == [], (raw, unexplained)


def test_mutants_options_have_help() -> None:
    text = subprocess.run([sys.executable, "-m", "conformance.cli", "mutants", "--help"], capture_output=True,
                          text=True, timeout=60).stdout
    assert re.search(r"--suite \{coordinator,worker,all\}\s+which suite's mutants", text), text
    assert re.search(r"--reports DIR\s+where mutants.json", text), text


@pytest.fixture
def plain_broker() -> Iterator[str]:
    """``fakebroker serve`` with its defaults: not the broker goldens are recorded on."""
    proc = subprocess.Popen([sys.executable, "-m", "fakebroker.cli", "serve", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        proc.terminate()
        proc.wait(20)


def test_replays_hint_works_when_followed(plain_broker: str) -> None:
    golden = ROOT / "fixtures" / "golden" / "CLS-COMMIT-01.jsonl"
    replay = [sys.executable, "-m", "fakebroker.cli", "replay", str(golden), "--against"]
    first = subprocess.run([*replay, plain_broker], capture_output=True, text=True, timeout=120)
    assert first.returncode == 1, first.stdout
    hint = re.search(r"to serve it as recorded: fakebroker serve (.+)", first.stdout)
    assert hint and "--strict-topics" in hint.group(1) and "--topic events:3" in hint.group(1), first.stdout
    # Following it: a broker served with those options passes the replay.
    proc = subprocess.Popen([sys.executable, "-m", "fakebroker.cli", "serve", "--port", "0",
                             *hint.group(1).split()], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        again = subprocess.run([*replay, proc.stdout.readline().strip()], capture_output=True, text=True,
                               timeout=120)
    finally:
        proc.terminate()
        proc.wait(20)
    assert again.returncode == 0 and "1 passed" in again.stdout, again.stdout


def test_pip_users_are_told_how_to_get_allure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import conformance.reports.certificate as certificate
    monkeypatch.setattr(certificate, "allure_binary", lambda: None)
    index, why = certificate.render_allure(tmp_path / "allure-results", tmp_path / "allure-report")
    assert index is None
    assert f"npm install --global allure-commandline@{certificate.ALLURE_VERSION}" in why and ".ci/" not in why
    # ... the version the set-up and the CI examples install
    for path in (".ci/setup.sh", "examples/ci/github-actions.yml", "examples/ci/gitlab-ci.yml"):
        assert f"allure-commandline@{certificate.ALLURE_VERSION}" in (ROOT / path).read_text(), path


KAFKA_IMPORT = "def test_k():\n    import kafka\n    from kafka.coordinator.base import BaseCoordinator  # noqa: F401\n"


@pytest.mark.parametrize("plugin, floods", [((), False), (("-p", "no:fakebroker"), True)])
def test_kafka_pythons_import_warnings_do_not_flood_the_output(tmp_path: Path, plugin: tuple[str, ...],
                                                               floods: bool) -> None:
    """In a fresh interpreter: with the fakebroker plugin (loaded by every pytest run where the
    package is installed) none of kafka-python's ~218 DeprecationWarnings; without it, the flood
    (so this test can fail)."""
    (tmp_path / "test_k.py").write_text(KAFKA_IMPORT)
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-o", "addopts=", *plugin,
                        "test_k.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert r.returncode == 0, r.stdout[-2000:]
    assert ("DeprecationWarning" in r.stdout) is floods, r.stdout[-2000:]

