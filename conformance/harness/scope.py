"""What a run must cover before it may certify: the scope of a target.

The scope of a target is every requirement binding the target's kind, each once per
Connect sub-protocol it is run at (the golden transcripts are cases of requirements).
A run's results are compared with it: whatever has no result is *left out*, with the reason,
and a run that left anything out is PARTIAL, never CERTIFIED (``conformance.reports.certificate``).

Per-protocol runs: on a **worker** target, a requirement bound to Connect's sub-protocols
(``eager`` / ``compatible`` / ``sessioned``) runs once per sub-protocol it names that the
target claims, with the worker started at that ``connect.protocol``; its case id is
``REQ[protocol]`` (``CONN-INC-02[compatible]``). A requirement bound only to ``classic``
(the CLS-W family: the group protocol underneath, the same at every sub-protocol), to the
draft's ``connect`` or to ``sticky`` runs once, at the target's own ``connect_protocol``,
under its plain id. A coordinator takes no ``connect.protocol`` (its cases pick the
members' protocols themselves), so coordinator requirements always run once.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..catalogue.requirements import Requirement, default_catalogue
from .target import Target

SUB_PROTOCOLS = ("eager", "compatible", "sessioned")
GOLDEN_MISSING = "golden transcripts"  # the left-out entry when no golden folder is found


@dataclass(frozen=True)
class RequirementRun:
    """One requirement at one sub-protocol (None: once, at the target's connect_protocol)."""

    requirement: Requirement
    protocol: str | None = None

    @property
    def id(self) -> str:
        return case_id(self.requirement.id, self.protocol)

    def __repr__(self) -> str:  # pytest and Allure show it as the parameter's value
        return self.id


def case_id(requirement_id: str, protocol: str | None) -> str:
    return f"{requirement_id}[{protocol}]" if protocol else requirement_id


def protocols_to_run(req: Requirement, target: Target) -> list[str | None]:
    """The sub-protocols ``req`` runs at on ``target`` ([None]: once, unsuffixed)."""
    if target.kind != "worker":
        return [None]
    return [p for p in SUB_PROTOCOLS if p in req.protocols and p in target.protocols] or [None]


def requirement_runs(reqs: list[Requirement], target: Target) -> list[RequirementRun]:
    return [RequirementRun(r, p) for r in reqs for p in protocols_to_run(r, target)]


def requirements_of(suite: str) -> list[Requirement]:
    """The requirements a run of ``suite`` runs; without a golden folder, those whose only
    cases are golden transcripts are left out (``left_out`` says so in one entry)."""
    reqs = default_catalogue().for_suite(suite)
    if not _goldens_missing(reqs):
        return reqs
    from .cases import loaded_cases
    live = loaded_cases()
    return [r for r in reqs if not r.transcripts or r.id in live]


def _goldens_missing(reqs: list[Requirement]) -> bool:
    from .golden import golden_dir
    return any(r.transcripts for r in reqs) and golden_dir() is None


def scope_ids(target: Target) -> list[str]:
    """Every case id a full run of ``target`` must record (a missing golden folder is
    reported by ``left_out`` as one entry)."""
    return [r.id for r in requirement_runs(requirements_of(target.kind), target)]


def left_out(target: Target, suite: str, recorded: set[str], *, narrowed_by: str = "") -> list[dict[str, str]]:
    """What of the target's scope has no result, each with why: outside the suite that ran,
    golden catalogue not found, deselected (-k/-m), or no result at all."""
    planned = {r.id for r in requirement_runs(requirements_of(suite), target)}
    out = []
    for cid in scope_ids(target):
        if cid in recorded:
            continue
        if cid not in planned:
            why = f"outside the suite that ran ({suite}; the target is a {target.kind})"
        elif narrowed_by:
            why = f"not run in a run narrowed with {narrowed_by}"
        else:
            why = "no result recorded (the run stopped early or a test process died)"
        out.append({"id": cid, "reason": why})
    if _goldens_missing(default_catalogue().for_suite(target.kind)):
        from .golden import RULES_FILE
        out.append({"id": GOLDEN_MISSING,
                    "reason": f"no golden folder found ({RULES_FILE}; set CONFORMANCE_GOLDEN_DIR)"})
    return out
