"""What a bundled worker declares about its deliberate defects (worker mutants).

A worker module that implements defects behind ``--mutant NAME`` lists them in a
module-level ``MUTANTS: dict[str, WorkerMutant]``; ``fixtures/mutants/workers/NAME.toml``
starts the worker with that flag, and ``conformance mutants`` (``conformance/tools/worker_power.py``)
runs the worker suite against it, the designated case first.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WorkerMutant:
    defect: str          # one line: the obligation it breaks
    killed_by: str       # the requirement whose case is designated to refuse it
    survives: str = ""   # a written reason, when no case can refuse it (the spec does not pin it)
    # For a mutant refused by an invariant (conformance.invariants, checked over every case's
    # exchanges): the case that leads the worker into the defect, run first in its stead.
    via: str = ""

    @property
    def first_case(self) -> str:
        return self.via or self.killed_by
