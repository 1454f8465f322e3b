"""Python workers re-read their zip archives before every task: Spark's worker calls
``importlib.invalidate_caches()`` at each task's start (so files shipped with the task can
be imported), and on Python 3.11 that makes every ``zipimporter`` on the path (pyspark.zip,
py4j's zip, the spark-core jar, one importer per package imported from them) read its
archive's whole directory again: ~0.1-0.4 s of CPU per task, which grows with the number
of tasks, so with the corpus. Those archives do not change while a worker lives (a file a
task ships gets a path of its own, and so an importer of its own), so their importers may
skip it. Called by every function that runs in a worker; cheap to repeat."""

from __future__ import annotations

import sys
import zipimport


def _unchanged() -> None:
    """An archive's directory, read once when the worker first imported from it, stays valid."""


def settle_archives() -> None:
    for finder in list(sys.path_importer_cache.values()):
        if isinstance(finder, zipimport.zipimporter) and "invalidate_caches" not in vars(finder):
            finder.invalidate_caches = _unchanged  # type: ignore[method-assign]
