"""Two certifications of the same targets compared case by case: verdicts, counts per level
and outcome, every requirement's outcome (per Connect protocol), every case's outcome within
it (golden replays, scenarios) and the scope left out. For checking that a change which
should not change behaviour (a restructuring) did not, and for naming what a change that
should did change.

    python -m conformance.tools.compare_runs BEFORE AFTER

BEFORE and AFTER are report folders as ``conformance run --reports`` writes them: a folder
holding results.json (one target) or a folder of such folders (several). Runs are paired by
their target's name; two single runs are paired whatever their names (a target and its
mutant, ``mutant:NAME``). Exit 0 when nothing differs, 1 when something does, 2 when a folder is
not a report folder. Unlike ``conformance history`` (Spark, one target's runs over time,
requirements only), this reads two trees of any number of targets, case by case, without a
warehouse. An invariant's case that passed on one side and did not give it a round on the
other is listed apart, as evidence that moved, and not counted.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fakebroker.exit_codes import EXIT_USAGE

from ..invariants.report import is_invariant
from ..reports.results_file import ResultsError, read

RESULTS, CERTIFICATE = "results.json", "certificate.json"
ABSENT = "absent"  # the side that did not run the requirement or case
# An invariant's cases are the cases that gave it rounds to judge; a case that ends at the
# worker's first JoinGroup gives one or none depending on how far the worker got before the
# case stopped it. Such a case passing on one side and absent on the other is evidence that
# moved, not an outcome that changed: listed apart.
UNJUDGED = {"PASS", ABSENT}


class CompareError(ValueError):
    """A folder that is not a report folder, or two runs of one target in one tree."""


@dataclass(frozen=True)
class TargetRun:
    """What of one target's run is compared."""
    target: str
    folder: Path
    verdict: str
    counts: dict[str, dict[str, int]]  # level -> outcome -> n (the certificate's)
    outcomes: dict[str, str]  # result id (requirement[protocol]) -> outcome
    cases: dict[tuple[str, str], str]  # (result id, case) -> outcome
    left_out: frozenset[str]
    invariants: frozenset[str]  # result ids of the invariants (judged over the other cases)

    def must(self) -> str:
        """MUST PASS/FAIL (and BROKEN when any) as the table shows them."""
        m = self.counts.get("MUST", {})
        text = f"{m.get('PASS', 0)}/{m.get('FAIL', 0)}"
        return text + (f" broken {m['BROKEN']}" if m.get("BROKEN") else "")


def read_run(folder: Path) -> TargetRun:
    run = read(folder / RESULTS)
    cert_file = folder / CERTIFICATE
    verdict, counts = "no certificate", {}
    if cert_file.exists():
        try:
            cert = json.loads(cert_file.read_text(encoding="utf-8"))
            verdict, counts = cert["verdict"], cert["counts"]
        except (ValueError, KeyError, TypeError) as e:
            raise CompareError(f"{cert_file}: not a certificate (verdict and counts): {e}") from None
    rows = run.doc["results"]
    return TargetRun(
        run.doc["target"]["name"], folder, verdict, counts,
        {r["id"]: r["outcome"] for r in rows},
        {(r["id"], c["case"]): c["outcome"] for r in rows for c in r.get("cases") or []},
        run.left_out, frozenset(r["id"] for r in rows if is_invariant(r.get("requirement") or r["id"])))


def read_tree(root: Path) -> dict[str, TargetRun]:
    """Every target's run under ``root``: root itself when it holds results.json, else each
    sub-folder that does."""
    if not root.is_dir():
        raise CompareError(f"{root}: no such folder")
    folders = [root] if (root / RESULTS).exists() else sorted(
        p for p in root.iterdir() if (p / RESULTS).exists())
    if not folders:
        raise CompareError(f"{root}: no {RESULTS} in it or in its sub-folders (rule: a report folder "
                           "of conformance run)")
    runs: dict[str, TargetRun] = {}
    for f in folders:
        try:
            r = read_run(f)
        except ResultsError as e:
            raise CompareError(str(e)) from None
        if r.target in runs:
            raise CompareError(f"{root}: two runs of target {r.target!r} ({runs[r.target].folder.name}, "
                               f"{f.name}): pair one run per target")
        runs[r.target] = r
    return runs


def _changed(before: dict[Any, str], after: dict[Any, str]) -> Iterator[tuple[Any, str, str]]:
    for key in sorted(before.keys() | after.keys()):
        b, a = before.get(key, ABSENT), after.get(key, ABSENT)
        if b != a:
            yield key, b, a


def differences(before: TargetRun | None, after: TargetRun | None) -> tuple[list[str], list[str]]:
    """One line per thing that differs between two runs of a target (none: the same), and
    apart the invariants' evidence that moved (``UNJUDGED``)."""
    if before is None or after is None:
        return [f"run only {'after' if before is None else 'before'}"], []
    out, evidence = [], []
    if before.verdict != after.verdict:
        out.append(f"verdict: {before.verdict} -> {after.verdict}")
    for level in sorted(before.counts.keys() | after.counts.keys()):
        for outcome, b, a in _changed({k: str(v) for k, v in before.counts.get(level, {}).items()},
                                      {k: str(v) for k, v in after.counts.get(level, {}).items()}):
            out.append(f"count {level} {outcome}: {b} -> {a}")
    out += [f"{rid}: {b} -> {a}" for rid, b, a in _changed(before.outcomes, after.outcomes)]
    for (rid, case), b, a in _changed(before.cases, after.cases):
        moved = rid in before.invariants | after.invariants and {b, a} <= UNJUDGED
        (evidence if moved else out).append(f"{rid} case {case}: {b} -> {a}")
    for rid in sorted(before.left_out ^ after.left_out):
        out.append(f"left out: {rid} only {'before' if rid in before.left_out else 'after'}")
    return out, evidence


def compare(before: dict[str, TargetRun], after: dict[str, TargetRun]) -> tuple[list[str], int]:
    """The table (target, verdict and MUST PASS/FAIL each side, differences, evidence moved)
    then every difference, then every move of evidence; and how many differences there are."""
    if len(before) == len(after) == 1 and before.keys() != after.keys():
        (b, run), = before.items()
        (a,) = after
        before = {f"{b} -> {a}": run}
        after = {f"{b} -> {a}": after[a]}
    names = sorted(before.keys() | after.keys())
    diffs = {n: differences(before.get(n), after.get(n)) for n in names}
    width = max([len(n) for n in names] + [len("target")])
    side = lambda r: f"{r.verdict} {r.must()}" if r else "-"  # noqa: E731
    lines = [f"{'target':<{width}}  {'before (MUST pass/fail)':<32}  {'after (MUST pass/fail)':<32}  "
             "differences  evidence moved"]
    lines += [f"{n:<{width}}  {side(before.get(n)):<32}  {side(after.get(n)):<32}  {len(diffs[n][0]):<11}  "
              f"{len(diffs[n][1])}" for n in names]
    for n in names:
        lines += [f"{n}: {d}" for d in diffs[n][0]]
    for n in names:
        lines += [f"{n}: evidence: {d}" for d in diffs[n][1]]
    return lines, sum(len(d) for d, _ in diffs.values())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m conformance.tools.compare_runs",
                                description="compare two certifications of the same targets case by case")
    p.add_argument("before", type=Path, metavar="BEFORE", help="report folder (or folder of them)")
    p.add_argument("after", type=Path, metavar="AFTER", help="report folder (or folder of them)")
    args = p.parse_args(argv)
    try:
        lines, n = compare(read_tree(args.before), read_tree(args.after))
    except CompareError as e:
        print(f"compare_runs: {e}", file=sys.stderr)
        return EXIT_USAGE
    try:
        print("\n".join(lines))
        print(f"{n} difference(s) (evidence moved not counted)", flush=True)
    except BrokenPipeError:  # `compare_runs ... | head`: the reader stopped early, which is fine
        sys.stdout = None  # type: ignore[assignment]  # keep Python from flushing again at exit
    return 1 if n else 0


if __name__ == "__main__":
    sys.exit(main())
