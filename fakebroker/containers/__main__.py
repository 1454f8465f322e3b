"""``python -m fakebroker.containers``: the project's containers and images.

    python -m fakebroker.containers cleanup            # remove the containers ended processes left
    python -m fakebroker.containers fakebroker-image   # build the fake broker's image (checkout)

Exit codes: 0 done, 1 the engine could not (the message says why), 2 usage.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from .engine import EngineError, docker_unavailable, remove_ours
from .images import fakebroker_image


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m fakebroker.containers", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.add_parser("cleanup", help="remove the project's containers whose process has ended")
    fb = sub.add_parser("fakebroker-image", help="build the fake broker's image on the project's base")
    fb.add_argument("--root", type=Path, default=Path.cwd(), help="the checkout (default: here)")
    args = p.parse_args(argv)
    if args.command is None:
        p.print_help(sys.stderr)
        return 2
    why_not = docker_unavailable()
    if why_not is not None:
        print(f"containers: no Docker engine ({why_not})", file=sys.stderr)
        return 1
    if args.command == "cleanup":
        removed = remove_ours()
        print(f"removed {len(removed)} container(s){': ' + ' '.join(removed) if removed else ''}")
        return 0
    t0 = time.monotonic()
    try:
        tag = fakebroker_image(args.root.resolve())
    except EngineError as e:
        print(f"containers: {e}", file=sys.stderr)
        return 1
    print(f"{tag} ({time.monotonic() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
