"""A spec directory that passed the strict check is not checked again in the next process
(``fakebroker.protocol.spec_verdicts``), unless a byte of it, or of the checker, changed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fakebroker.protocol import Registry, SpecError
from fakebroker.protocol import spec_check, spec_verdicts

from tests.test_user_spec import BROKEN_SPEC, REQUEST_SPEC, spec_dir  # noqa: F401 - spec_dir: a fixture


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """The files ``check_spec`` is called for; the verdicts in a cache of this test's own."""
    monkeypatch.setenv("CONNECT_CONFORMANCE_CACHE", str(tmp_path / "cache"))
    seen: list[str] = []
    real = spec_check.check_spec

    def counting(doc: object, file: str) -> None:
        seen.append(Path(file).name)
        real(doc, file)
    monkeypatch.setattr(spec_check, "check_spec", counting)
    return seen


def test_a_passed_directory_is_built_unchecked_next_time(checks: list[str], spec_dir: Path) -> None:
    first = Registry.load(spec_dir)
    assert checks == ["WidgetSyncRequest.json", "WidgetSyncResponse.json"]
    checks.clear()
    again = Registry.load(spec_dir)
    assert checks == []
    assert sorted(again.types) == sorted(first.types)
    assert again["WidgetSyncRequest"].spec == first["WidgetSyncRequest"].spec


def test_a_changed_byte_is_checked_and_refused(checks: list[str], spec_dir: Path) -> None:
    Registry.load(spec_dir)
    # The same name, other bytes: a spec the checker refuses.
    (spec_dir / "WidgetSyncRequest.json").write_text(BROKEN_SPEC, encoding="utf-8")
    checks.clear()
    with pytest.raises(SpecError) as info:
        Registry.load(spec_dir)
    assert info.value.rule == "tagged-versions-flexible"
    assert checks == ["WidgetSyncRequest.json"]


def test_an_added_file_is_checked(checks: list[str], spec_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "WidgetSyncRequest.json").write_text(REQUEST_SPEC, encoding="utf-8")
    Registry.load(tmp_path / "other")
    checks.clear()
    Registry.load(spec_dir)  # one file more than the directory that passed
    assert checks == ["WidgetSyncRequest.json", "WidgetSyncResponse.json"]


def test_a_refused_directory_is_never_remembered(checks: list[str], tmp_path: Path) -> None:
    d = tmp_path / "broken"
    d.mkdir()
    (d / "BrokenThingRequest.json").write_text(BROKEN_SPEC, encoding="utf-8")
    for _ in range(2):
        with pytest.raises(SpecError):
            Registry.load(d)
    assert checks == ["BrokenThingRequest.json"] * 2


def test_a_changed_checker_checks_again(checks: list[str], spec_dir: Path,
                                        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    Registry.load(spec_dir)
    changed = tmp_path / "spec_check"
    shutil.copytree(spec_verdicts.CHECKER, changed)
    tags = changed / "tags.py"  # one rule module of the package changes
    tags.write_bytes(tags.read_bytes() + b"\n# a new rule\n")
    monkeypatch.setattr(spec_verdicts, "CHECKER", changed)
    checks.clear()
    Registry.load(spec_dir)
    assert checks == ["WidgetSyncRequest.json", "WidgetSyncResponse.json"]


def test_an_unwritable_cache_checks_every_time(checks: list[str], spec_dir: Path,
                                               monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    monkeypatch.setenv("CONNECT_CONFORMANCE_CACHE", str(blocker))
    for _ in range(2):
        Registry.load(spec_dir)
    assert checks == ["WidgetSyncRequest.json", "WidgetSyncResponse.json"] * 2
