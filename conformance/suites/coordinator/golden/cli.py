"""``conformance golden``: regenerate (or check) the golden transcripts.

Exit statuses: 0 written, or no drift; 1 a drift, or a scenario that no longer gets the
outcome its requirement states; 2 usage (an unknown id, a scenario the catalogue does not
list).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_DIVERGED, EXIT_USAGE = 0, 1, 2


def register(sub: Any) -> None:
    g = sub.add_parser(
        "golden", help="regenerate (or check) the golden transcripts",
        description="Run every golden scenario (one per transcript the catalogue lists) against "
                    "a fresh fake broker on a virtual clock, record, annotate with matchers and "
                    "write DIR/<ID>.jsonl and DIR/rules.json. With --check, compare instead "
                    "and exit 1 naming every file that drifted.")
    g.add_argument("--dir", type=Path, default=None, metavar="DIR",
                   help="the golden directory (default: fixtures/golden of the checkout)")
    g.add_argument("--check", action="store_true", help="compare, do not write")
    g.add_argument("--only", action="append", default=[], metavar="ID",
                   help="only this transcript (repeatable; rules.json is left alone)")
    g.set_defaults(func=cmd_golden)


def _fail(message: str, status: int) -> int:
    print(f"conformance golden: {message}", file=sys.stderr)
    return status


def cmd_golden(args: argparse.Namespace) -> int:
    from fakebroker.protocol import default_registry

    from .generate import default_dir, drift, render_all, write
    from .registry import GOLDENS, NotInCatalogue
    from .session import ScenarioFailed
    unknown = [r for r in args.only if r not in GOLDENS]
    if unknown:
        return _fail(f"no golden scenario {', '.join(unknown)}", EXIT_USAGE)
    directory = args.dir or default_dir()
    try:
        files = render_all(default_registry(), args.only or None)
    except NotInCatalogue as e:
        return _fail(str(e), EXIT_USAGE)
    except ScenarioFailed as e:
        return _fail(f"scenario failed: {e}", EXIT_DIVERGED)
    if args.check:
        problems = drift(directory, files)
        for p in problems:
            print(p)
        print(f"{len(files)} file(s) checked, {len(problems)} drifted")
        return EXIT_DIVERGED if problems else EXIT_OK
    removed = write(directory, files)
    print(f"wrote {len(files)} file(s) to {directory}"
          + (f"; removed {', '.join(removed)}" if removed else ""))
    return EXIT_OK
