"""Entry point for ``spark-submit``: the same commands as ``conformance ingest|audit|history``,
with the master and settings taken from spark-submit."""

import sys

from conformance.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
