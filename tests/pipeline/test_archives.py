"""A Python worker does not re-read its zip archives at each task's invalidate_caches()."""

from __future__ import annotations

import importlib
import sys
import zipfile
import zipimport

import pytest

from conformance.pipeline.archives import settle_archives


@pytest.fixture
def archive_on_path(tmp_path, monkeypatch):
    path = tmp_path / "shipped.zip"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("shipped_pkg/__init__.py", "")
        z.writestr("shipped_pkg/first.py", "VALUE = 1\n")
        z.writestr("shipped_pkg/second.py", "VALUE = 2\n")
    monkeypatch.syspath_prepend(str(path))
    yield path
    for name in ("shipped_pkg", "shipped_pkg.first", "shipped_pkg.second"):
        sys.modules.pop(name, None)
    for key in [k for k in sys.path_importer_cache if k.startswith(str(path))]:
        del sys.path_importer_cache[key]


def _reads(monkeypatch) -> list[str]:
    """Every archive directory read from now on, by path."""
    reads: list[str] = []
    real = zipimport._read_directory

    def counting(archive):  # noqa: ANN001, ANN202
        reads.append(archive)
        return real(archive)

    monkeypatch.setattr(zipimport, "_read_directory", counting)
    return reads


def test_invalidate_caches_reads_an_archive_again_without_it(archive_on_path, monkeypatch):
    importlib.import_module("shipped_pkg.first")
    reads = _reads(monkeypatch)
    importlib.invalidate_caches()
    assert str(archive_on_path) in reads  # the cost settle_archives removes (Python 3.10+)


def test_settled_archives_are_not_read_again_and_still_import(archive_on_path, monkeypatch):
    assert importlib.import_module("shipped_pkg.first").VALUE == 1
    settle_archives()
    reads = _reads(monkeypatch)
    importlib.invalidate_caches()
    assert not [r for r in reads if r == str(archive_on_path)]
    assert importlib.import_module("shipped_pkg.second").VALUE == 2  # the archive still serves imports
    settle_archives()  # repeated (every worker function calls it): no harm
    importlib.invalidate_caches()
    assert not [r for r in reads if r == str(archive_on_path)]
