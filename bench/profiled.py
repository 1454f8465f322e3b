"""Run a `fakebroker` command under cProfile counting CPU time, not wall time (on a shared
machine, wall time charges other processes' turns to whatever was running).

    python bench/profiled.py STATS_FILE serve --port 0 ...   # stats written when it exits
    python -m pstats STATS_FILE
"""

from __future__ import annotations

import cProfile
import runpy
import sys
import time


def main() -> None:
    out, sys.argv = sys.argv[1], ["fakebroker", *sys.argv[2:]]
    prof = cProfile.Profile(time.process_time)
    prof.enable()
    try:
        runpy.run_module("fakebroker.cli", run_name="__main__")
    except SystemExit:
        pass
    finally:
        prof.disable()
        prof.dump_stats(out)


if __name__ == "__main__":
    main()
