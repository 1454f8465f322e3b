"""The pytest command that runs the suite on one target: what ``conformance run`` and
``conformance matrix`` start, one process tree per target (or matrix cell)."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

from .target import Target


def process_count(target: Target, workers: str) -> int:
    """``-n``: a number, or ``auto``: the cores, twice over for a real-clock target (its
    cases wait on real processes far more than they compute: four processes on two cores
    certify a real Connect worker in about half the time of two)."""
    if workers != "auto":
        return int(workers)
    cores = os.cpu_count() or 1
    return cores if target.virtual_clock else 2 * cores


def pytest_command(target: Target, out: Path, args: argparse.Namespace) -> list[str]:
    """The pytest command running the suite on ``target`` into ``out`` (emptied of a former
    run's results); ``args``: run's options (workers, strict, suite, keyword, markexpr)."""
    results_dir = out / "allure-results"
    if results_dir.exists():
        shutil.rmtree(results_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "pytest", "--pyargs", "conformance", "--conformance-target", target.path,
           "-p", "no:cacheprovider", "-o", "addopts=", "-v", "--tb=line", "-rfE",
           "--alluredir", str(results_dir), "--conformance-results", str(out / "results.json")]
    processes = process_count(target, str(args.workers))
    if processes:
        # One case at a time to a free process (two queued at most), in the plugin's order
        # (longest bound first): cases last from a second to forty (a real worker's windows),
        # and the default chunks of consecutive cases could queue three long ones on one.
        cmd += ["-n", str(processes), "--dist", "load", "--maxschedchunk", "1"]
    if getattr(args, "strict", False):
        cmd.append("--conformance-strict")
    if getattr(args, "no_artefact_digest", False):
        cmd.append("--conformance-no-artefact-digest")
    if getattr(args, "suite", None):
        cmd += ["--conformance-suite", args.suite]
    if getattr(args, "keyword", None):
        cmd += ["-k", args.keyword]
    if getattr(args, "markexpr", None):
        cmd += ["-m", args.markexpr]
    return cmd
