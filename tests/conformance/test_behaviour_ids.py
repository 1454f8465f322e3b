"""Every expected behaviour has one name, the catalogue's id (schemas/requirements.json):
the differential scenarios (fakebroker/realkafka/scenarios.py) and the executable worked
examples (fixtures/scenarios/*.yaml) refer to behaviour by those ids only, and every id they
name is a requirement of the catalogue."""

from __future__ import annotations

from pathlib import Path

import yaml

from conformance.catalogue.requirements import default_catalogue
from fakebroker.realkafka.scenarios import REQUIREMENTS, SCENARIOS

ROOT = Path(__file__).resolve().parents[2]
# The differential scenarios of APIs the catalogue states nothing of.
UNSTATED = {"api-versions", "consumer-group-heartbeat", "consumer-group-errors"}


def test_differential_scenarios_name_catalogue_requirements_of_the_coordinator() -> None:
    cat = default_catalogue()
    assert set(REQUIREMENTS) == set(SCENARIOS)
    assert {name for name, ids in REQUIREMENTS.items() if not ids} == UNSTATED
    unknown = {(name, rid) for name, ids in REQUIREMENTS.items() for rid in ids if rid not in cat}
    assert unknown == set()
    assert all("coordinator" in cat[rid].binds for ids in REQUIREMENTS.values() for rid in ids)
    assert all(len(set(ids)) == len(ids) for ids in REQUIREMENTS.values())


def test_worked_examples_name_catalogue_requirements() -> None:
    cat = default_catalogue()
    files = sorted((ROOT / "fixtures" / "scenarios").glob("*.yaml"))
    assert files
    for f in files:
        doc = yaml.safe_load(f.read_text())
        assert "id" not in doc and "source" not in doc, f"{f.name}: a name or source of its own"
        unknown = [rid for rid in doc["requirements"] if rid not in cat]
        assert not unknown, f"{f.name}: {unknown} not in the catalogue"
        if doc["kind"] == "connect-group":  # runs against the coordinator
            assert all("coordinator" in cat[rid].binds for rid in doc["requirements"]), f.name
