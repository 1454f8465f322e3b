"""Where `make test` spends the machine's CPU: each test's CPU seconds, its own process's and
every live descendant's (Spark and Kafka JVMs, `conformance run` subprocesses, workers).

The suite is bound by the two cores, not by its waits (1389 s of CPU in a run of 4 test
processes), so a test's CPU, not its wall time, says what it costs the others: wall time
under `-n 4` moves with whatever else runs at once. As a pytest plugin, one file per test
process (``<prefix>-gw0.tsv``...: node id, wall s, CPU s, end time):

    env PYTHONPATH=$PWD SUITE_CPU_OUT=/tmp/run .venv/bin/python -m pytest -n 4 --dist loadgroup \\
        -p bench.suite_cpu
    python bench/suite_cpu.py /tmp/run-gw*.tsv [--top 40]

The second prints CPU and wall per module, heaviest first, and per test process its sum and
when its last test ended. A test's figure includes what its process's long-lived children
(a session's Kafka) spent meanwhile; processes that detach from the tree are not seen; the
/proc walk costs ~2 ms a test.
"""

from __future__ import annotations

import argparse
import os
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

TICKS = os.sysconf("SC_CLK_TCK")


def tree_cpu(root: int) -> float:
    """CPU seconds of ``root`` and its live descendants, with what each has reaped."""
    children: dict[int, list[int]] = defaultdict(list)
    ticks: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after the command, which may hold spaces
        children[int(fields[1])].append(int(entry))
        ticks[int(entry)] = sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
    tree, i = [root], 0
    while i < len(tree):
        tree.extend(children.get(tree[i], ()))
        i += 1
    return sum(ticks.get(p, 0) for p in tree) / TICKS


_out: IO[str] | None = None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[Any]:
    global _out
    if _out is None:
        prefix = os.environ.get("SUITE_CPU_OUT", "suite-cpu")
        _out = open(f"{prefix}-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.tsv", "a", buffering=1)
    wall, cpu = time.monotonic(), tree_cpu(os.getpid())
    yield
    _out.write(f"{item.nodeid}\t{time.monotonic() - wall:.3f}\t{tree_cpu(os.getpid()) - cpu:.3f}\t"
               f"{time.time():.1f}\n")


def summary(files: list[Path], top: int) -> None:
    cpu: Counter[str] = Counter()
    wall: Counter[str] = Counter()
    count: Counter[str] = Counter()
    for f in files:
        rows = [line.rstrip("\n").split("\t") for line in f.read_text().splitlines()]
        for node, w, c, _ in rows:
            module = node.split("::")[0]
            cpu[module] += float(c)
            wall[module] += float(w)
            count[module] += 1
        print(f"{f.name}: {len(rows)} tests, wall {sum(float(r[1]) for r in rows):.0f} s, "
              f"CPU {sum(float(r[2]) for r in rows):.0f} s, last ended {max(float(r[3]) for r in rows):.0f}")
    total = sum(cpu.values())
    print(f"CPU of every test: {total:.0f} s; wall summed over the processes: {sum(wall.values()):.0f} s")
    for module, c in cpu.most_common(top):
        print(f"{c:8.1f} s CPU {c / total:6.1%}  wall {wall[module]:7.1f} s  {count[module]:4d} tests  {module}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("files", nargs="+", type=Path, help="the .tsv files of one run")
    p.add_argument("--top", type=int, default=40, help="modules to list")
    a = p.parse_args()
    summary(a.files, a.top)


if __name__ == "__main__":
    main()
