"""The conformance pytest plugin (entry point ``pytest11``: ``conformance``).

    pytest --pyargs conformance --conformance-target fixtures/targets/fakebroker.toml [-n 2]
           [--conformance-strict] [--conformance-suite coordinator|worker|all]
           [--alluredir reports/allure-results] [-m "MUST and sessioned"]

Without ``--conformance-target`` the plugin only registers its options and markers: it
collects nothing and changes nothing, so other test suites (the project's own ``tests/``)
are unaffected. Its options are all namespaced ``--conformance-*``.

With a target, ``conformance/test_conformance.py`` is parametrised with one test per
requirement of the selected suite (per Connect sub-protocol on a worker target:
``CONN-INC-02[compatible]``, see ``conformance.harness.scope``), the case id being the test id.
Every test carries markers for its level (``MUST``, ``SHOULD``, ``MAY``) and protocols
(``classic``, ``eager``, ``compatible``, ``sessioned``, ``connect``, ``sticky``); a
requirement whose cases include golden transcripts carries ``golden``. Each case runs in the test body (so pytest's and
Allure's durations are the case's own); the outcome maps onto pytest as follows:

| outcome        | pytest                         | status word (-v) |
| -------------- | ------------------------------ | ---------------- |
| PASS           | passed                         | PASS             |
| NON-STRICT     | xfailed (failed with --conformance-strict) | NON-STRICT |
| NOT-APPLICABLE | skipped, with the reason       | NOT-APPLICABLE   |
| FAIL           | failed (AssertionError)        | FAIL             |
| BROKEN         | error (Allure: broken)         | BROKEN           |

The controlling process (also under pytest-xdist) collects every outcome and writes
``results.json`` (``--conformance-results``) with what of the target's scope was left out,
and beside it the certificate (``certificate.json``/``.md``) and the attestation; it prints
the verdict last and exits with the project's code (0 certified, 1 not certified, 3 broken,
4 partial), not pytest's "tests passed". With ``--alluredir`` it also writes Allure's
``environment.properties``, ``categories.json`` and ``executor.json``. Every file of a run
carries its run id. The target's commands and artefact are checked before any case runs
(``conformance.harness.command.preflight``, ``conformance.reports.provenance.require_artefact``).
"""

from __future__ import annotations

import json
import platform
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .reports.allure_support import (PROTOCOL_TITLES, attach_evidence, attach_failure, keep_fixture_teardowns_known,
                             label_case, write_allure_extras, write_invariant_results)
from .catalogue.requirements import LEVELS, Requirement, default_catalogue
from .harness.command import CommandError, preflight
from .harness.cases import load_cases, loaded_cases
from .harness.outcomes import CaseResult, Outcome
from .reports.provenance import ArtefactMissing, new_run_id, require_artefact
from .harness.scope import RequirementRun, left_out, requirement_runs, requirements_of
from .harness.target import Target, TargetError, load_target
from .chaos.regression import check_scenarios

PACKAGE_DIR = Path(__file__).resolve().parent
TARGET_KEY = pytest.StashKey[Target]()
RESULTS_KEY = pytest.StashKey[dict[str, dict[str, Any]]]()
STARTED_KEY = pytest.StashKey[float]()
RUN_ID_KEY = pytest.StashKey[str]()
CERTIFICATE_KEY = pytest.StashKey[dict[str, Any]]()
USER_PROPERTY = "conformance"
API_VERSIONS = "api_versions"  # results.json / certificate key: the negotiated version ranges


class ConformanceFailure(AssertionError):
    """A MUST (or, under --conformance-strict, a SHOULD) that the target does not meet."""


class BrokenCase(Exception):
    """The case could not run: reported as a pytest error."""


# ---------------------------------------------------------------- options and activation

def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("conformance", "Connect group-protocol conformance")
    g.addoption("--conformance-target", metavar="FILE", default=None,
                help="target file (TOML) of the implementation under test; enables the suite")
    g.addoption("--conformance-strict", action="store_true", default=False,
                help="a SHOULD not met (NON-STRICT) fails instead of xfailing")
    g.addoption("--conformance-suite", choices=("coordinator", "worker", "all"), default=None,
                help="which requirements to run (default: those binding the target's kind; "
                     "a narrower suite makes the verdict PARTIAL)")
    g.addoption("--conformance-results", metavar="FILE", default="reports/results.json",
                help="where the controlling process writes every outcome (default %(default)s); "
                     "certificate.json/.md and the attestation go beside it")
    g.addoption("--conformance-no-artefact-digest", action="store_true", default=False,
                help="certify a target with nothing local to digest as its tested artefact; the "
                     "certificate says it was not digested")


def active(config: pytest.Config) -> bool:
    return config.getoption("--conformance-target", default=None) is not None


MARKERS = {
    "conformance": "a case of the conformance suite",
    "golden": "a requirement with golden transcripts replayed as its cases",
    "chaos": "a chaos scenario of the target file ([chaos] scenarios), a regression case",
    **{level: f"a conformance case of a {level} requirement" for level in LEVELS},
    **{p: f"a conformance case of the {p} protocol: {title}" for p, title in PROTOCOL_TITLES.items()},
}


def pytest_configure(config: pytest.Config) -> None:
    for name, text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")
    if not active(config):
        return
    try:
        target = config.stash[TARGET_KEY] = load_target(config.getoption("--conformance-target"))
        check_scenarios(target)
        if _is_controller(config):  # before any case runs: what the target runs is there
            preflight(target)
            require_artefact(target, config.getoption("--conformance-no-artefact-digest"))
    except (TargetError, CommandError, ArtefactMissing) as e:
        raise pytest.UsageError(str(e)) from None
    from . import suites
    load_cases(suites)  # the suites register their cases: the harness is handed them
    config.stash[RESULTS_KEY] = {}
    config.stash[STARTED_KEY] = time.time()
    config.stash[RUN_ID_KEY] = new_run_id(config.stash[STARTED_KEY])
    keyword = config.getoption("keyword", default="")
    if keyword:  # a retired id (schemas/id-renames.json) selects the requirement holding its rule
        config.option.keyword = default_catalogue().resolve_ids_in(keyword)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Without --conformance-target, the suite's own test modules are not collected at all;
    with one, the scenarios' module only when the target names scenarios."""
    if active(config):
        if collection_path.name == "test_chaos_scenarios.py" and not config.stash[TARGET_KEY].chaos_scenarios:
            return True
        return None
    try:
        inside = collection_path.resolve().is_relative_to(PACKAGE_DIR)
    except OSError:
        return None
    if inside and collection_path.name.startswith("test_"):
        return True
    return None


def suite_of(config: pytest.Config) -> str:
    return config.getoption("--conformance-suite") or config.stash[TARGET_KEY].kind


def planned_runs(config: pytest.Config) -> list[RequirementRun]:
    """The tests: every requirement run but the invariants', which the run reports from
    every case's exchanges (``conformance.invariants.report``, at the session's end)."""
    from .invariants.report import is_invariant
    return [r for r in requirement_runs(requirements_of(suite_of(config)), config.stash[TARGET_KEY])
            if not is_invariant(r.requirement.id)]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if not active(metafunc.config):
        return
    if "scenario_path" in metafunc.fixturenames:  # [chaos] scenarios: one test each, named as its file
        metafunc.parametrize("scenario_path", [
            pytest.param(p, id=p.name.removesuffix(".toml"), marks=[pytest.mark.chaos])
            for p in metafunc.config.stash[TARGET_KEY].chaos_scenarios])
    if "requirement_run" not in metafunc.fixturenames:
        return
    metafunc.parametrize("requirement_run", [
        pytest.param(run, id=run.id, marks=[getattr(pytest.mark, m) for m in _marks(run)])
        for run in longest_first(planned_runs(metafunc.config))])


def longest_first(runs: list[RequirementRun]) -> list[RequirementRun]:
    """The runs by their case's bound (``timeout_s``), longest first, else in catalogue
    order: on several test processes the long cases start early instead of ending a run
    alone (the real-time ones take up to ~40 s)."""
    cases = loaded_cases()
    return sorted(runs, key=lambda r: -cases[r.requirement.id].timeout_s if r.requirement.id in cases else 0.0)


def _marks(run: RequirementRun) -> list[str]:
    """Level and protocol markers: ``-m "MUST and sessioned"``; ``golden`` on a requirement
    with golden transcripts."""
    return [run.requirement.level, *([run.protocol] if run.protocol else run.requirement.protocols),
            *(["golden"] if run.requirement.transcripts else [])]


# ---------------------------------------------------------------- fixtures

@pytest.fixture(scope="session")
def conformance_target(request: pytest.FixtureRequest) -> Target:
    """The implementation under test, from ``--conformance-target``."""
    if not active(request.config):
        pytest.skip("no --conformance-target given")
    return request.config.stash[TARGET_KEY]


@pytest.fixture(scope="session")
def conformance_session(conformance_target: Target, request: pytest.FixtureRequest) -> Iterator[Any]:
    """The started target of this process (for the builtin broker: one per xdist worker; a
    real Kafka: the run's, see harness.shared_kafka)."""
    from .harness.sessions import CoordinatorSession
    from .harness.worker import WorkerSession
    workerinput = getattr(request.config, "workerinput", None)
    try:
        if conformance_target.kind == "coordinator":
            session: Any = CoordinatorSession.start(conformance_target, workerinput)
        else:
            session = WorkerSession.start(conformance_target, workerinput)
    except Exception as e:  # noqa: BLE001 - a target that cannot start makes every case BROKEN
        yield e
        return
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture
def requirement(requirement_run: RequirementRun) -> Requirement:
    """The catalogue entry this test certifies."""
    return requirement_run.requirement


def run_requirement(request: pytest.FixtureRequest, requirement_run: RequirementRun, target: Target,
                    session: Any) -> CaseResult:
    """Runs the requirement's case (at the run's sub-protocol) in the test body, so that the
    test's duration (pytest's and Allure's) is the case's; labels and attaches its evidence.
    A BROKEN case raises ``BrokenCase`` here: reported as an error (Allure: broken)."""
    from .harness.runner import run_case
    requirement = requirement_run.requirement
    if isinstance(session, Exception):
        result = CaseResult(requirement.id, requirement.level, Outcome.BROKEN,
                            f"the target could not be started: {session}", protocol=requirement_run.protocol)
    else:
        result = run_case(requirement, session, requirement_run.protocol)
    _record_case(request, requirement, target, result, getattr(session, "api_ranges", None))
    return result


def _record_case(request: pytest.FixtureRequest, requirement: Requirement, target: Target, result: CaseResult,
                 ranges: Any) -> None:
    """The result carried to the controller (results.json), labelled and attached for Allure;
    a BROKEN one raises ``BrokenCase``."""
    record = result.record()
    record["strict"] = request.config.getoption("--conformance-strict")
    if ranges is not None:  # carried to the controller; results.json keeps it once
        from .harness.sessions import negotiated
        record[API_VERSIONS] = negotiated(ranges)
    request.node.user_properties.append((USER_PROPERTY, json.dumps(record)))
    label_case(requirement, target, result)
    if result.outcome in (Outcome.FAIL, Outcome.NON_STRICT, Outcome.BROKEN):
        attach_failure(result)
    elif result.outcome is Outcome.PASS:
        attach_evidence(result)  # a pass is certified on evidence too
    if result.outcome is Outcome.BROKEN:
        raise BrokenCase(f"BROKEN {result.case_id}: {result.message}")


def run_scenario_case(request: pytest.FixtureRequest, path: Path, target: Target) -> CaseResult:
    """A chaos scenario (``conformance.chaos.regression``) in the test body, recorded,
    labelled and attached as a requirement's case is; BROKEN raises ``BrokenCase``."""
    from .chaos.regression import run_scenario
    result = run_scenario(path, target, getattr(request.config, "workerinput", None))
    _record_case(request, default_catalogue()[result.requirement_id], target, result, None)
    return result


def report_outcome(result: CaseResult, strict: bool) -> None:
    """The test body: turn the outcome into pytest's terms."""
    __tracebackhide__ = True
    detail = result.message
    if result.expected is not None or result.actual is not None:
        detail += f"\n  expected: {result.expected!r}\n  actual:   {result.actual!r}"
    if result.outcome is Outcome.PASS:
        return
    if result.outcome is Outcome.NOT_APPLICABLE:
        pytest.skip(f"NOT-APPLICABLE: {result.message}")
    if result.outcome is Outcome.NON_STRICT:
        if strict:
            raise ConformanceFailure(f"NON-STRICT {result.case_id} (SHOULD, strict mode): {detail}")
        pytest.xfail(f"NON-STRICT: {detail}")
    if result.outcome is Outcome.FAIL:
        raise ConformanceFailure(f"FAIL {result.case_id} ({result.level}): {detail}")
    raise BrokenCase(result.message)  # unreachable: run_requirement raised already


# ---------------------------------------------------------------- reporting

@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_fixture_setup(fixturedef: Any, request: pytest.FixtureRequest) -> Any:
    yield
    if active(request.config):
        keep_fixture_teardowns_known(fixturedef)


def _record_of(report: pytest.TestReport) -> dict[str, Any] | None:
    for key, value in getattr(report, "user_properties", ()):
        if key == USER_PROPERTY:
            return json.loads(value)
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    if not active(config):
        return None
    rec = _record_of(report)
    if rec is None:
        return None
    outcome = rec["outcome"]
    if report.failed and (report.when == "setup" or outcome == "BROKEN"):
        return "error", "B", "BROKEN"
    if report.when != "call" and not (report.when == "setup" and report.skipped):
        return None
    if report.skipped and hasattr(report, "wasxfail"):
        return "xfailed", "s", "NON-STRICT"
    if report.skipped:
        return "skipped", "n", "NOT-APPLICABLE"
    if report.failed:
        return "failed", "F", ("NON-STRICT (strict)" if outcome == "NON-STRICT" else "FAIL")
    if report.passed:
        return "passed", ".", "PASS"
    return None


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    rec = _record_of(report)
    if rec is None and report.failed and report.when == "setup":
        rec = _broken_record(report)
    if rec is not None:
        if rec.get(API_VERSIONS):
            _API_VERSIONS.update(rec[API_VERSIONS])
        rec.pop(API_VERSIONS, None)
        _RESULTS_SEEN[report.nodeid] = rec


def _broken_record(report: pytest.TestReport) -> dict[str, Any] | None:
    """A conformance test that errored before its case could run (a fixture or import
    failing) is BROKEN with pytest's error, not a silent gap."""
    name = report.nodeid.rpartition("::")[2]
    test, _, rest = name.partition("[")
    if test != "test_requirement" or not rest.endswith("]"):
        return None
    cid = rest[:-1]
    base = cid.partition("[")[0]
    from .catalogue.requirements import default_catalogue
    cat = default_catalogue()
    lines = [ln for ln in report.longreprtext.splitlines() if ln.startswith("E ")] or report.longreprtext.splitlines()
    return {"id": cid, "requirement": base, "protocol": cid[len(base) + 1:-1] or None,
            "level": cat[base].level if base in cat else "MUST", "outcome": "BROKEN",
            "message": "the test errored before its case ran: " + " | ".join(ln[2:].strip() for ln in lines[-3:]),
            "expected": None, "actual": None, "duration_s": 0.0, "notes": []}


_RESULTS_SEEN: dict[str, dict[str, Any]] = {}
# A coordinator target's negotiated API versions (API -> [lowest, highest] or None), as the
# test processes learnt them (harness.sessions.negotiated).
_API_VERSIONS: dict[str, list[int] | None] = {}
SHARED_KAFKA_KEY = pytest.StashKey[Any]()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist's controller, before it starts each test process: the run's one real
    Kafka, started for the first (harness.shared_kafka), is handed to every process."""
    config = node.config
    if not active(config):
        return
    from .harness.shared_kafka import SharedKafka, shareable
    target = config.stash[TARGET_KEY]
    if not shareable(target):
        return
    if SHARED_KAFKA_KEY not in config.stash:
        config.stash[SHARED_KAFKA_KEY] = SharedKafka(target)
    node.workerinput.update(config.stash[SHARED_KAFKA_KEY].workerinput())


@pytest.hookimpl(wrapper=True)
def pytest_sessionstart(session: pytest.Session) -> Iterator[None]:
    """The controller: once xdist has spawned the test processes (its own sessionstart),
    the shared real Kafka starts while they import and collect."""
    result = yield
    if active(session.config) and SHARED_KAFKA_KEY in session.config.stash:
        session.config.stash[SHARED_KAFKA_KEY].start()
    return result


def pytest_unconfigure(config: pytest.Config) -> None:
    if active(config) and SHARED_KAFKA_KEY in config.stash:
        config.stash[SHARED_KAFKA_KEY].stop()


def _is_controller(config: pytest.Config) -> bool:
    return not hasattr(config, "workerinput")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    if not active(config) or not _is_controller(config) or config.option.collectonly:
        return  # --collect-only ran nothing: no results, no certificate
    target = config.stash[TARGET_KEY]
    from .reports.provenance import provenance
    results = list(_RESULTS_SEEN.values())
    invariants = []
    if suite_of(config) in ("worker", "all"):
        from .harness.invariant_results import results as invariant_results
        invariants = invariant_results(results, target)
        results += [r.record() for r in invariants]
    results = sorted(results, key=lambda r: r["id"])
    doc = {
        "run_id": config.stash[RUN_ID_KEY],
        "target": {"name": target.name, "path": target.path, "kind": target.kind,
                   "implementation": target.implementation_name, "version": _version(target),
                   "protocols": sorted(target.protocols), "connect_protocol": target.connect_protocol,
                   "capabilities": sorted(target.capabilities), "mutant": target.mutant},
        "suite": suite_of(config),
        "strict": bool(config.getoption("--conformance-strict")),
        "left_out": left_out(target, suite_of(config), {r["id"] for r in results},
                             narrowed_by=_narrowing(config)),
        "versions": environment_versions(),
        **({API_VERSIONS: dict(sorted(_API_VERSIONS.items()))} if _API_VERSIONS else {}),
        "provenance": provenance(target, config.stash[STARTED_KEY], time.time(),
                                 waived=config.getoption("--conformance-no-artefact-digest")),
        "workers": getattr(config.option, "numprocesses", None) or 0,
        "results": results,
    }
    out = Path(config.getoption("--conformance-results"))
    from .reports.results_file import check
    check(doc, str(out))  # the schema its readers (certificate, history) read it by
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    alluredir = getattr(config.option, "allure_report_dir", None)
    if alluredir:
        write_allure_extras(Path(alluredir), doc)
        write_invariant_results(Path(alluredir), invariants, target)
    # The same certificate as `conformance run` writes (it adds the HTML report's link),
    # and an exit code that tells the truth: pytest's own says only whether tests failed.
    from .reports.attestation import AttestationError, write_attestation
    from .reports.certificate import exit_code, write_certificate
    cert = config.stash[CERTIFICATE_KEY] = write_certificate(out.parent, results=out)
    try:
        write_attestation(out.parent, cert, None)
    except AttestationError:
        pass  # no digest: the certificate says so and does not certify
    if exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = exit_code(cert)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """The verdict, last: "1 passed" of a run narrowed with -k is not a certificate."""
    cert = config.stash.get(CERTIFICATE_KEY, None)
    if cert is None:
        return
    from .reports.allure_support import verdict_line
    out = Path(config.getoption("--conformance-results")).parent
    terminalreporter.write_sep("=", verdict_line(cert), bold=True,
                               red=cert["verdict"] != "CERTIFIED", green=cert["verdict"] == "CERTIFIED")
    terminalreporter.write_line(f"certificate: {out / 'certificate.md'} (run {cert['run_id']})")


def _version(target: Target) -> str:
    from .harness.inprocess import builtin_version
    return builtin_version(target) if target.builtin else target.implementation_version


def _narrowing(config: pytest.Config) -> str:
    """The options that narrowed this run's selection, as given ("" when none)."""
    given = [f"{flag} {value!r}" for flag, value in (("-k", config.getoption("keyword", default="")),
                                                       ("-m", config.getoption("markexpr", default="")))
             if value]
    if getattr(config.option, "deselect", None):
        given.append("--deselect")
    if getattr(config.option, "lf", False) or getattr(config.option, "last_failed", False):
        given.append("--lf")
    return ", ".join(given)


def environment_versions() -> dict[str, str]:
    from importlib import metadata

    def v(dist: str) -> str:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return "not installed"
    from fakebroker import __version__
    return {"python": platform.python_version(), "platform": platform.platform(terse=True),
            "connect-conformance": __version__, "pytest": pytest.__version__,
            "pytest-xdist": v("pytest-xdist"), "allure-pytest": v("allure-pytest"),
            "kafka-python": v("kafka-python"), "executable": sys.executable}
