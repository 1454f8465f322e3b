"""Expected outcomes of a calibration target: the verdict per requirement of a broker nobody
here wrote (``fixtures/expected/<target>.yaml``), checked in, so any change in its outcomes
shows, and the results page made from them (``docs/brokers.md``).

    python -m conformance.reports.expected update fixtures/expected/kfake.yaml --results reports/results.json
    python -m conformance.reports.expected check fixtures/expected/kfake.yaml --results reports/results.json
    python -m conformance.reports.expected docs [--out docs/brokers.md]

The file lists deviations only: a requirement of the target's suite that it does not list is
expected PASS, or NOT-APPLICABLE when the catalogue entry and the target file alone put it
outside the target's claims (``conformance.harness.runner.outside_claims``, what the runner
decides it with). Listed: every FAIL, NON-STRICT and BROKEN, and every other NOT-APPLICABLE
(e.g. a version the broker did not advertise, learnt during the run).

``update`` writes the outcomes of a real run (``results.json``) and keeps the evidence
already written; every FAIL (and NON-STRICT) needs a deviation entry by hand: one line of
evidence (the spec's sentence, or Apache Kafka's behaviour and where in its source) and
``upstream: true`` when it is worth reporting to the broker's authors. ``check`` lists every
difference between a run and the file, and what the file lacks.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..catalogue.requirements import default_catalogue
from ..harness.runner import outside_claims
from ..harness.target import TargetError, load_target

ROOT = Path(__file__).resolve().parents[2]
EXPECTED_DIR = ROOT / "fixtures" / "expected"
DOCS_PAGE = ROOT / "docs" / "brokers.md"
OUTCOMES = ("PASS", "NON-STRICT", "NOT-APPLICABLE", "FAIL", "BROKEN")
DEVIATING = ("FAIL", "NON-STRICT")  # the outcomes that need evidence


class ExpectedError(ValueError):
    """An expected-outcomes file that is not sound; the message names the file and field."""


@dataclass
class Expected:
    path: Path
    target: str            # the target file, relative to the project
    implementation: str
    version: str
    command: str           # what reproduces it
    outcomes: dict[str, str]  # every requirement of the suite (the file lists deviations: implied())
    deviations: dict[str, dict[str, Any]] = field(default_factory=dict)
    remarks: str = ""      # what holds for the whole run (by hand), e.g. why cases are BROKEN
    # Requirement id -> every outcome seen in real runs, where a broker's race made them
    # differ (``update --again``); each needs a deviation entry saying why.
    varies: dict[str, list[str]] = field(default_factory=dict)
    # A fragment of the failure message of a race of the broker (by hand, with its evidence
    # in remarks): a case failing with it deviates as documented, whatever it gave before.
    race: str = ""

    def allows(self, i: str, outcome: str | None) -> bool:
        return outcome == self.outcomes.get(i) or outcome in self.varies.get(i, ())

    @property
    def verdict(self) -> str:
        return "NOT CERTIFIED" if any(o in ("FAIL", "BROKEN") for o in self.outcomes.values()) else "CERTIFIED"


def implied(target: str) -> dict[str, str]:
    """Requirement id -> the outcome a file leaves unlisted, for every requirement of the
    suite of ``target`` (a target file, relative to the project): NOT-APPLICABLE when outside
    its claims, else PASS."""
    t = load_target(ROOT / target)
    return {r.id: "PASS" if outside_claims(r, t) is None else "NOT-APPLICABLE"
            for r in default_catalogue().for_suite(t.kind)}


def listed(e: Expected) -> dict[str, str]:
    """What the file lists: the outcomes that are not implied."""
    base = implied(e.target)
    return {i: o for i, o in e.outcomes.items() if base.get(i) != o}


def load_expected(path: Path) -> Expected:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as e:
        raise ExpectedError(f"{path}: cannot read: {e}") from None
    if not isinstance(data, dict):
        raise ExpectedError(f"{path}: (top level): a mapping is needed")
    missing = [k for k in ("target", "implementation", "version", "command", "outcomes") if k not in data]
    if missing:
        raise ExpectedError(f"{path}: {missing[0]}: missing")
    try:
        base = implied(str(data["target"]))
    except TargetError as err:
        raise ExpectedError(f"{path}: target: {err.path}: {err.problems[0]}") from None
    return Expected(path, str(data["target"]), str(data["implementation"]), str(data["version"]),
                    str(data["command"]), {**base, **{str(k): str(v) for k, v in (data["outcomes"] or {}).items()}},
                    {str(k): dict(v or {}) for k, v in (data.get("deviations") or {}).items()},
                    str(data.get("remarks") or ""),
                    {str(k): [str(o) for o in v] for k, v in (data.get("varies") or {}).items()},
                    str(data.get("race") or ""))


def problems(e: Expected) -> list[str]:
    """What makes the file unsound: unknown ids or outcomes, a FAIL without evidence,
    evidence for what is not a deviation."""
    cat = default_catalogue()
    out = [f"outcomes.{i}: not a requirement of the catalogue" for i in e.outcomes if i not in cat]
    out += [f"outcomes.{i}: {o!r} is not an outcome ({', '.join(OUTCOMES)})"
            for i, o in e.outcomes.items() if o not in OUTCOMES]
    out += [f"varies.{i}: {o!r} is not an outcome ({', '.join(OUTCOMES)})"
            for i, seen in e.varies.items() for o in seen if o not in OUTCOMES]
    for i, o in sorted(e.outcomes.items()):
        d = e.deviations.get(i)
        if i in e.varies and not (d and str(d.get("evidence") or "").strip()):
            out.append(f"deviations.{i}: its outcome varies between runs ({', '.join(e.varies[i])}); "
                       f"say why (the broker's race)")
            continue
        if o in DEVIATING and not (d and str(d.get("evidence") or "").strip()):
            out.append(f"deviations.{i}: {o} needs one line of evidence (the spec's sentence, or Apache "
                       f"Kafka's behaviour and where in its source)")
    out += [f"deviations.{i}: the outcome is {e.outcomes.get(i, 'not listed')}, not a deviation"
            for i in e.deviations if e.outcomes.get(i) not in DEVIATING and i not in e.varies]
    out += [f"deviations.{i}.upstream: true or false" for i, d in e.deviations.items()
            if not isinstance(d.get("upstream", False), bool)]
    return [f"{e.path}: {p}" for p in out]


def outcomes_of(results: dict[str, Any]) -> dict[str, str]:
    """Requirement id -> outcome of a run's ``results.json``."""
    return {r["id"]: r["outcome"] for r in results["results"]}


def differences(e: Expected, actual: dict[str, str], messages: dict[str, str] | None = None) -> list[str]:
    """Every requirement whose outcome differs, one line each; ``messages`` (id -> the run's
    message): a FAIL or NON-STRICT carrying the file's ``race`` is the documented race."""
    raced = {i for i, m in (messages or {}).items()
             if e.race and e.race in m and actual.get(i) in DEVIATING}
    ids = sorted(set(e.outcomes) | set(actual))
    def expected(i: str) -> str:
        return " or ".join(e.varies[i]) if i in e.varies else e.outcomes.get(i, "(not listed)")
    return [f"{i}: expected {expected(i)}, got {actual.get(i, '(no result)')}"
            for i in ids if not e.allows(i, actual.get(i)) and i not in raced]


# ---------------------------------------------------------------- writing

def render_expected(e: Expected) -> str:
    """The file's text: header, the outcomes that are not implied sorted by id, deviations
    with their evidence."""
    lines = [f"# Expected outcomes of {e.target} (the coordinator suite), checked by",
             "# tests/conformance/test_calibration_brokers.py: any change fails it. The outcomes are",
             "# written from a real run by `python -m conformance.reports.expected update`; the evidence of each",
             "# deviation by hand (upstream: true marks one worth reporting to the broker's authors).",
             "# A requirement not listed in outcomes is PASS, or NOT-APPLICABLE when the target file",
             "# puts it outside its claims (kind, protocols, capabilities).",
             f"target: {e.target}", f"implementation: {json.dumps(e.implementation)}",
             f"version: {json.dumps(e.version)}", f"command: {json.dumps(e.command)}",
             f"verdict: {e.verdict}"]
    if e.remarks:
        lines.append(f"remarks: {json.dumps(e.remarks)}")
    if e.race:
        lines.append(f"race: {json.dumps(e.race)}")
    shown = listed(e)
    lines.append("outcomes:" if shown else "outcomes: {}")
    lines += [f"  {i}: {o}" for i, o in sorted(shown.items())]
    lines.append("varies:" if e.varies else "varies: {}")
    lines += [f"  {i}: [{', '.join(seen)}]" for i, seen in sorted(e.varies.items())]
    lines.append("deviations:" if e.deviations else "deviations: {}")
    for i, d in sorted(e.deviations.items()):
        lines += [f"  {i}:", f"    evidence: {json.dumps(d.get('evidence'))}",
                  f"    upstream: {'true' if d.get('upstream') else 'false'}"]
    return "\n".join(lines) + "\n"


def updated(e: Expected, actual: dict[str, str], again: bool = False) -> Expected:
    """``e`` with the outcomes of a run: evidence kept for what still deviates, an empty
    entry (for the author to fill) for a new deviation. ``again``: a further run of the
    same suite; an outcome it gives that the file does not is kept as seen (``varies``)."""
    varies = {i: list(v) for i, v in e.varies.items()} if again else {}
    outcomes = {**actual, **e.outcomes} if again else dict(actual)
    if again:
        for i, o in actual.items():
            if i in e.outcomes and not e.allows(i, o):
                varies[i] = sorted({e.outcomes[i], o, *varies.get(i, ())})
    keep = {i: d for i, d in e.deviations.items() if outcomes.get(i) in DEVIATING or i in varies}
    new = {i: {"evidence": None, "upstream": False} for i, o in outcomes.items()
           if (o in DEVIATING or i in varies) and i not in keep}
    return Expected(e.path, e.target, e.implementation, e.version, e.command, outcomes, {**keep, **new},
                    e.remarks, varies, e.race)


def first_expected(path: Path, target: dict[str, Any]) -> Expected:
    """A new file for the target of a run (``results.json``'s ``target``)."""
    return Expected(path, target["path"], target["implementation"], target["version"],
                    reproduce(target["path"], path), {})


def reproduce(target_path: str, expected_path: Path) -> str:
    """The commands that certify the target and compare the run with the file."""
    reports = f"reports/{Path(target_path).stem}"
    return (f"conformance run --target {target_path} -n 2 --reports {reports}\n"
            f"python -m conformance.reports.expected check {expected_path.relative_to(ROOT) if expected_path.is_absolute() else expected_path} "
            f"--results {reports}/results.json")


def render_docs(files: list[Expected]) -> str:
    """docs/brokers.md: per broker its version, verdict, every deviation with its evidence,
    and the command that reproduces it. Only deviations are counted: a requirement added
    that a broker passes leaves the page as it is."""
    out = ["# Results per broker", "",
           "The coordinator suite run on Kafka-compatible brokers nobody here wrote, as h2spec and",
           "Autobahn publish theirs for many servers. Generated from the checked-in expected outcomes",
           "(`fixtures/expected/*.yaml`) by `python -m conformance.reports.expected docs`; the tests check this",
           "page against them and re-run every broker against its file. Apache Kafka 4.2.0 (the",
           "reference) and the fake broker are CERTIFIED (`fixtures/targets/apache-kafka.md`).",
           "A deviation marked **upstream** is worth reporting to the broker's authors.", "",
           "A requirement not listed as a deviation passes, or is NOT-APPLICABLE (outside what the",
           "target file claims, or at a version the broker does not offer). The `conformance run` of each",
           "section's Reproduce block writes every outcome (`results.json`) and their counts per level",
           "(`certificate.md`).", ""]
    out += ["| broker | version | verdict | " + " | ".join(DEVIATION_KINDS) + " |",
            "| --- | --- | --- |" + " --- |" * len(DEVIATION_KINDS)]
    for e in files:
        n = _deviation_counts(e)
        out.append(f"| [{e.implementation}](#{_anchor(e.implementation)}) | {e.version} | {e.verdict} | "
                   + " | ".join(str(n[k]) for k in DEVIATION_KINDS) + " |")
    cat = default_catalogue()
    for e in files:
        out += ["", f"## {e.implementation}", "",
                f"Version {e.version}; target `{e.target}`; **{e.verdict}**. Reproduce:", "",
                "```sh", e.command, "```"]
        deviating = sorted(i for i, o in e.outcomes.items() if o in DEVIATING or i in e.varies)
        out += ["", f"Deviations ({len(deviating)}):" if deviating else "No deviation.", ""]
        for i in deviating:
            d = e.deviations.get(i, {})
            mark = " **upstream**" if d.get("upstream") else ""
            seen = " or ".join(e.varies[i]) if i in e.varies else e.outcomes[i]
            out.append(f"- **{i}** ({cat[i].level}, {seen}){mark}: {cat[i].statement}  ")
            out.append(f"  Evidence: {d.get('evidence')}")
        if e.race:
            out += ["", f"A case failing with \"{e.race}\" meets the broker's race described below, whatever "
                    "it gave before."]
        if e.varies:
            out += ["", "Outcomes that differ between runs (the broker races with the cases' timing): "
                    + "; ".join(f"{i} {' or '.join(seen)}" for i, seen in sorted(e.varies.items())) + "."]
        broken = sorted(i for i, o in e.outcomes.items() if o == "BROKEN")
        if broken:
            out += ["", f"BROKEN ({len(broken)}, the suite could not judge): {', '.join(broken)}."]
        if e.remarks:
            out += ["", e.remarks]
    return "\n".join(out) + "\n"


# The summary's columns: what deviates, by kind (none moves when a passing requirement is added).
DEVIATION_KINDS = ("MUST FAIL", "SHOULD NON-STRICT", "BROKEN", "varies")


def _deviation_counts(e: Expected) -> dict[str, int]:
    cat = default_catalogue()
    fixed = [(cat[i].level, o) for i, o in e.outcomes.items() if i not in e.varies]
    return {"MUST FAIL": fixed.count(("MUST", "FAIL")), "SHOULD NON-STRICT": fixed.count(("SHOULD", "NON-STRICT")),
            "BROKEN": sum(o == "BROKEN" for _, o in fixed), "varies": len(e.varies)}


def _anchor(title: str) -> str:
    return "".join(ch for ch in title.lower().replace(" ", "-") if ch.isalnum() or ch == "-")


def bundled() -> list[Expected]:
    return [load_expected(p) for p in sorted(EXPECTED_DIR.glob("*.yaml"))]


# ---------------------------------------------------------------- command line

def main(argv: list[str] | None = None) -> int:
    from fakebroker.exit_codes import EXIT_FAILED, EXIT_OK, EXIT_USAGE
    p = argparse.ArgumentParser(prog="python -m conformance.reports.expected", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    for name in ("update", "check"):
        s = sub.add_parser(name)
        s.add_argument("file", type=Path)
        s.add_argument("--results", type=Path, required=True, help="a run's results.json")
        if name == "update":
            s.add_argument("--again", action="store_true",
                           help="a further run: keep the file's outcomes, add what differs as seen (varies)")
    d = sub.add_parser("docs")
    d.add_argument("--out", type=Path, default=DOCS_PAGE)
    a = p.parse_args(argv)
    try:
        if a.command == "docs":
            a.out.parent.mkdir(parents=True, exist_ok=True)
            a.out.write_text(render_docs(bundled()), encoding="utf-8")
            print(f"wrote {a.out}")
            return EXIT_OK
        try:
            results = json.loads(a.results.read_text(encoding="utf-8"))
            actual = outcomes_of(results)
            messages = {r["id"]: r.get("message") or "" for r in results["results"]}
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise ExpectedError(f"{a.results}: not a run's results.json: {err}") from None
        e = (load_expected(a.file) if a.file.exists() or a.command == "check"
             else first_expected(a.file, results["target"]))
    except ExpectedError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE
    if a.command == "update":
        e = updated(e, actual, again=a.again)
        a.file.write_text(render_expected(e), encoding="utf-8")
        print(f"wrote {a.file}: {e.verdict}")
    found = (differences(e, actual, messages) if a.command == "check" else []) + problems(e)
    for line in found:
        print(line)
    return EXIT_FAILED if found else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
