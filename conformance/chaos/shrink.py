"""Shrinking a violating schedule with hypothesis' own shrinker (``hypothesis.find``): each
operation is kept or dropped and each fault's length shortened towards its least, and
hypothesis minimises the schedule for which ``violates`` still holds. The search is seeded
(``derandomize``) and keeps no database: the same schedule and predicate, the same result."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from hypothesis import HealthCheck, Phase, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

from .schedule import Op, Schedule

MIN_FOR_MS = 200  # a fault shorter than this is no fault (a heartbeat interval is ~1 s or more)


def _variant(op: Op) -> st.SearchStrategy[Op | None]:
    # An integer that shrinks to 0 (dropped) but is drawn non-zero nine times in ten: the
    # first examples keep most operations, so a violation needing several is found.
    keep = st.integers(0, 9)
    if op.for_ms > MIN_FOR_MS:
        length = st.integers(MIN_FOR_MS, op.for_ms)
        return st.tuples(keep, length).map(lambda kl: replace(op, for_ms=kl[1]) if kl[0] else None)
    return keep.map(lambda k: op if k else None)


def sub_schedules(s: Schedule) -> st.SearchStrategy[Schedule]:
    return st.tuples(*(_variant(o) for o in s.ops)).map(
        lambda ops: s.with_ops(tuple(o for o in ops if o is not None)))


def shrink(s: Schedule, violates: Callable[[Schedule], bool], max_examples: int = 40) -> Schedule:
    """The smallest sub-schedule of ``s`` hypothesis finds that still ``violates``; ``s``
    itself when none of the tried ones does (the caller has confirmed ``s`` violates).
    Each call of ``violates`` may run a real campaign: ``max_examples`` bounds them, and no
    sub-schedule is run twice (its first answer stands: confirming is the caller's rerun)."""
    if not s.ops:
        return s
    answers: dict[Schedule, bool] = {}

    def first_answer(candidate: Schedule) -> bool:
        # A real run's verdict varies from run to run; hypothesis asks again for the example it
        # keeps (and calls a changed answer flaky): each candidate is run once, its answer kept.
        if candidate not in answers:
            answers[candidate] = violates(candidate)
        return answers[candidate]
    try:
        return find(sub_schedules(s), first_answer,
                    settings=settings(max_examples=max_examples, database=None, derandomize=True, deadline=None,
                                      phases=[Phase.generate, Phase.shrink],
                                      suppress_health_check=list(HealthCheck)))
    except NoSuchExample:
        return s
