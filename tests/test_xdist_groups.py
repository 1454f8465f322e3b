"""tests/conftest.py: under `--dist loadgroup` (make test) the tests of one xdist_group run
on one test process, whichever pytest (9.2 ignores pytest-xdist's own marking)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CONFTEST = Path(__file__).resolve().parent / "conftest.py"
TESTS = '''
import os
import pytest

pytestmark = pytest.mark.xdist_group("whole-module")

def where(name):
    with open(os.environ["WHERE"], "a") as f:
        f.write(f"{name} {os.environ['PYTEST_XDIST_WORKER']}\\n")

@pytest.mark.parametrize("i", range(6))
def test_grouped(i):
    where(f"grouped-{i}")
'''
LOOSE = '''
import time

def test_loose_a():
    time.sleep(0.5)

def test_loose_b():
    time.sleep(0.5)
'''


def test_the_tests_of_an_xdist_group_run_on_one_process(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST.read_text())
    (tmp_path / "test_grouped.py").write_text(TESTS)
    (tmp_path / "test_loose.py").write_text(LOOSE)
    where = tmp_path / "where.txt"
    r = subprocess.run([sys.executable, "-m", "pytest", "-n", "3", "--dist", "loadgroup", "-p", "no:cacheprovider",
                        "-o", "addopts=", "-q", "--rootdir", str(tmp_path), str(tmp_path)],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "WHERE": str(where)})
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    ran = dict(line.split() for line in where.read_text().splitlines())
    assert sorted(ran) == [f"grouped-{i}" for i in range(6)]
    assert len(set(ran.values())) == 1, ran
