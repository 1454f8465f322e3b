"""The requirement catalogue: valid data, named rules, and a case for every testable id."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from conformance.catalogue.requirements import (CatalogueError, load_catalogue, validate_catalogue_data)
from conformance import suites
from conformance.harness.cases import load_cases
from fakebroker.protocol import default_schema_dir

ROOT = Path(__file__).resolve().parents[2]

SCHEMAS = default_schema_dir()


@pytest.fixture(scope="module")
def raw() -> dict:
    return json.loads((SCHEMAS / "requirements.json").read_text())


@pytest.fixture(scope="module")
def schema() -> dict:
    return json.loads((SCHEMAS / "requirements.schema.json").read_text())


def test_shipped_catalogue_is_valid_and_large() -> None:
    cat = load_catalogue()
    assert len(cat) > 100
    assert {r.level for r in cat} == {"MUST", "SHOULD", "MAY"}
    assert {"worker", "coordinator"} <= {b for r in cat for b in r.binds}


def test_sources_are_public_documents() -> None:
    """The catalogue cites the public documents by name and section, each with its URL;
    every MUST cites a specification, never only what Apache Kafka does."""
    cat = load_catalogue()
    cited = {r.source.doc.id for r in cat}
    assert {"CLASSIC", "KIP-341", "KIP-345", "KIP-394", "KIP-415", "KIP-507", "CONNECT-848"} <= cited
    assert all(d.url.startswith("https://") for d in cat.cited())
    assert all(r.source.doc.kind == "spec" for r in cat if r.level == "MUST")
    r = cat["CONN-META-01"]
    assert r.source.short == "KIP-415 § Connect protocol's format"
    assert r.source.link.startswith("https://cwiki.apache.org/") and "#:~:text=Connect%20protocol" in r.source.link


def test_rule_source_known(raw: dict, schema: dict) -> None:
    data = copy.deepcopy(raw)
    data["requirements"][0]["source"]["doc"] = "KIP-9999"
    problems = validate_catalogue_data(data, schema)
    assert problems == [f"{data['requirements'][0]['id']}: source.doc 'KIP-9999' is not in sources.json "
                        "(rule source-known)"]


def test_rule_must_cites_spec(raw: dict, schema: dict) -> None:
    data = copy.deepcopy(raw)
    entry = next(e for e in data["requirements"] if e["level"] == "MUST")
    entry["source"]["doc"] = "KAFKA-BEHAVIOUR"
    problems = validate_catalogue_data(data, schema)
    assert problems == [f"{entry['id']}: a MUST cites KAFKA-BEHAVIOUR, which is not a specification "
                        "(kind reference-implementation) (rule must-cites-spec)"]


# Worker-side requirements whose cases need machinery the worker suite does not have yet:
# a sticky-assignor consumer scenario (no consumer worker target, and no
# ConsumerProtocolSubscription spec in schemas/ to decode its JoinGroup metadata). A target
# claiming `sticky` as a worker gets BROKEN ("no case is implemented") for these, never a
# pass. The list must shrink, never grow: a case added for one of them fails this test until
# the id is removed here. (The draft's worker side, C848-W-*, is covered by
# conformance/suites/worker/cases_draft.py against fixtures/targets/draft-worker.toml.)
PENDING: set[str] = set()


def test_every_testable_requirement_has_a_case() -> None:
    """The coverage rule: an id without a case (a live case or golden transcripts) must say
    why it cannot be checked from outside (``untestable``), or be one of the PENDING
    worker-side ids above."""
    from conformance.invariants.report import is_invariant
    cases = load_cases(suites)  # an invariant's case is every worker case (conformance.invariants)
    missing = {r.id for r in load_catalogue()
               if r.untestable is None and r.id not in cases and not r.transcripts and not is_invariant(r.id)}
    assert missing - PENDING == set(), f"requirement(s) without a case: {sorted(missing - PENDING)}"
    assert PENDING - missing == set(), f"now covered, remove from PENDING: {sorted(PENDING - missing)}"
    assert all(r.binds == ("worker",) for r in load_catalogue() if r.id in PENDING)


def test_the_golden_folder_and_the_catalogue_agree() -> None:
    """Every transcript ``conformance golden`` wrote (its index, rules.json) is a case of the
    catalogue requirements it names, which list it; every transcript the catalogue names
    exists; a transcript is named for a requirement of the catalogue (one id scheme)."""
    folder = ROOT / "fixtures" / "golden"
    index = json.loads((folder / "rules.json").read_text())["rules"]
    cat = load_catalogue()
    named = {r.id: sorted(r.transcripts) for r in cat if r.transcripts}
    cases_of: dict[str, list[str]] = {}
    for entry in index:
        assert entry["requirements"][0] == entry["id"].split(".")[0], entry["id"]
        for rid in entry["requirements"]:
            assert rid in cat, f"{entry['transcript']} is a case of {rid}, not in the catalogue"
            cases_of.setdefault(rid, []).append(entry["transcript"])
    assert named == {rid: sorted(ts) for rid, ts in cases_of.items()}
    assert all((folder / name).is_file() for names in named.values() for name in names)
    assert all(cat[rid].binds == ("coordinator",) for rid in named)
    assert {r.family for r in cat} == {"CLS", "C848", "CONN", "K341"}


def test_retired_ids_name_their_successors() -> None:
    """schemas/id-renames.json: every id of the former golden catalogue names the requirement
    holding its rule now (merged into a live twin or renamed), every old transcript its new
    file; retired ids are accepted as aliases where a user names requirements."""
    cat = load_catalogue()
    renames = json.loads((ROOT / "schemas" / "id-renames.json").read_text())
    assert set(renames["requirements"]) == {t.removesuffix(".jsonl") for t in renames["transcripts"]}
    assert len(renames["requirements"]) == 155
    folder = ROOT / "fixtures" / "golden"
    for old, new in renames["requirements"].items():
        assert old not in cat and new in cat, old
        assert renames["transcripts"][f"{old}.jsonl"] in cat[new].transcripts, old
        assert (folder / renames["transcripts"][f"{old}.jsonl"]).is_file(), old
    assert set(renames["merged"]) <= set(renames["requirements"])
    merged_into = {renames["requirements"][m] for m in renames["merged"]}
    assert all(r in load_cases(suites) for r in merged_into)  # merged only into requirements with a live case
    assert cat.resolve("CLASSIC-SYNC-ERR-05") == "CLS-SYNC-01" and cat.resolve("CLS-SYNC-01") == "CLS-SYNC-01"
    assert cat.resolve_ids_in("CLASSIC-HB-ERR-01 or not CONNECT-TIMER-01") == "CLS-HB-06 or not C848-HB-HND-08"
    assert cat.aliases("C848-HB-VAL-05") == ["CONNECT-HB-VAL-06", "CONNECT-HB-VAL-07"]


def test_rule_renames_names_the_field() -> None:
    from conformance.catalogue.requirements import rule_renames_resolve
    entries = [{"id": "CLS-JOIN-01"}, {"id": "OLD-JOIN-01"}]
    problems = rule_renames_resolve(entries, {"OLD-JOIN-01": "CLS-JOIN-01", "OLD-JOIN-02": "CLS-JOIN-99"})
    assert problems == ["OLD-JOIN-02: renamed to CLS-JOIN-99, which is not in the catalogue (rule renames)",
                        "OLD-JOIN-01: retired (id-renames) but still a requirement's id (rule renames)"]


def test_no_case_for_an_unknown_or_untestable_id() -> None:
    cat = load_catalogue()
    for rid in load_cases(suites):
        assert rid in cat, f"case for {rid}, which is not in the catalogue"
        assert cat[rid].untestable is None, f"{rid} is marked untestable but has a case"


@pytest.mark.parametrize("mutate, fragment", [
    (lambda e: e.update(level="MUSTN'T"), "requirements/0/level"),
    (lambda e: e.update(id="cls-join-1"), "requirements/0/id"),
    (lambda e: e.update(binds=["broker"]), "requirements/0/binds/0"),
    (lambda e: e.update(protocols=[]), "requirements/0/protocols"),
    (lambda e: e["source"].update(doc="spec/999.txt"), "requirements/0/source/doc"),
    (lambda e: e.pop("statement"), "'statement' is a required property"),
])
def test_schema_rule_names_the_field(raw: dict, schema: dict, mutate, fragment: str) -> None:
    data = copy.deepcopy(raw)
    mutate(data["requirements"][0])
    problems = validate_catalogue_data(data, schema)
    assert problems and any(fragment in p for p in problems), problems
    assert all("(rule schema)" in p for p in problems)


@pytest.mark.parametrize("versions, problem", [
    ({"JoinGrup": [4, None]}, "versions names 'JoinGrup', not an API (rule versions-known)"),
    ({"JoinGroup": [7, 4]}, "versions JoinGroup [7, 4] is not a range, lowest first"),
    ({"JoinGroup": [99, None]}, "versions JoinGroup [99, None] is not a range, lowest first, that shares a version"),
])
def test_rule_versions_known(raw: dict, schema: dict, versions: dict, problem: str) -> None:
    data = copy.deepcopy(raw)
    data["requirements"][0]["versions"] = versions
    problems = validate_catalogue_data(data, schema)
    assert len(problems) == 1 and problem in problems[0], problems


def test_versions_of_a_requirement() -> None:
    cat = load_catalogue()
    assert cat["CLS-JOIN-01"].version_needs == {"JoinGroup": (4, None)}
    assert cat["CLS-DESC-02"].version_needs == {"DescribeGroups": (0, 5)}
    assert cat["CLS-JOIN-10"].version_needs == {}


def test_rule_unique_ids(raw: dict, schema: dict) -> None:
    data = copy.deepcopy(raw)
    data["requirements"].append(copy.deepcopy(data["requirements"][0]))
    problems = validate_catalogue_data(data, schema)
    assert problems == [f"{data['requirements'][0]['id']}: used twice (rule unique-ids)"]


def test_load_refuses_an_invalid_file(tmp_path, raw: dict) -> None:
    data = copy.deepcopy(raw)
    data["requirements"][3]["level"] = "OPTIONAL"
    p = tmp_path / "requirements.json"
    p.write_text(json.dumps(data))
    with pytest.raises(CatalogueError) as e:
        load_catalogue(p)
    assert "requirements/3/level" in str(e.value)


def test_nothing_reads_the_folder_beside_the_checkout() -> None:
    """Users clone the project alone: no code, build or CI file names a path that climbs out of
    the checkout, by a relative ``../`` path or by ``Path(__file__).parents[N]`` (the catalogue
    cites public documents by URL instead)."""
    root = Path(__file__).resolve().parents[2]
    files = [p for d in ("conformance", "fakebroker", "bench", ".ci", "examples") for p in (root / d).rglob("*")
             if p.is_file() and p.suffix in (".py", ".sh", ".yml", ".toml", "")]
    files += [root / "pyproject.toml", root / "Makefile", root / "Dockerfile"]
    checked = 0
    for path in files:
        text = path.read_text(errors="replace")
        for m in re.finditer(r"\.\./[\w./-]*", text):
            checked += 1
            assert (path.parent / m.group()).resolve().is_relative_to(root), f"{path.relative_to(root)} names {m.group()}"
        for m in re.finditer(r"__file__\)\.resolve\(\)\.parents\[(\d+)\]", text):
            checked += 1
            assert path.resolve().parents[int(m.group(1))].is_relative_to(root), \
                f"{path.relative_to(root)} climbs {m.group(1)} folders up, out of the checkout"
    assert checked > 10  # the project does name its own files this way: the check saw them