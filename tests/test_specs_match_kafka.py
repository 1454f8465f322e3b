"""Our message specs (``schemas/messages/``, written by us) state the same facts as Apache
Kafka 4.2.0's own: every key and value of every field, struct and version range, except the
``about`` texts (our words) and Kafka's ``//`` comments. The reference is the spec files
inside kafka-clients-4.2.0.jar, resolved from Maven Central by ``.ci/setup.sh``."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from fakebroker.realkafka.provision import KAFKA_VERSION, cached_libs

OURS = Path(__file__).resolve().parents[1] / "schemas" / "messages"
SPECS = sorted(OURS.glob("*.json"))

pytestmark = pytest.mark.realkafka  # needs the resolved jars, not a running broker


@pytest.fixture(scope="module")
def kafka_specs() -> zipfile.ZipFile:
    libs = cached_libs()
    if libs is None:
        pytest.fail(f"Kafka {KAFKA_VERSION}'s jars are not resolved: run `bash .ci/setup.sh` "
                    f"(or `python -m fakebroker.realkafka resolve`)", pytrace=False)
    return zipfile.ZipFile(libs / f"kafka-clients-{KAFKA_VERSION}.jar")


def facts(o: Any) -> Any:
    """Everything but the prose."""
    if isinstance(o, dict):
        return {k: facts(v) for k, v in o.items() if k != "about"}
    if isinstance(o, list):
        return [facts(v) for v in o]
    return o


def differences(ours: Any, theirs: Any, path: str) -> list[str]:
    if isinstance(ours, dict) and isinstance(theirs, dict):
        out = [f"{path}: keys only ours {sorted(set(ours) - set(theirs))}, only Kafka's "
               f"{sorted(set(theirs) - set(ours))}"] if set(ours) != set(theirs) else []
        return out + [d for k in ours if k in theirs for d in differences(ours[k], theirs[k], f"{path}.{k}")]
    if isinstance(ours, list) and isinstance(theirs, list):
        out = [f"{path}: {len(ours)} entries, Kafka's {len(theirs)}"] if len(ours) != len(theirs) else []
        return out + [d for i, (a, b) in enumerate(zip(ours, theirs)) for d in differences(a, b, f"{path}[{i}]")]
    if ours != theirs or type(ours) is not type(theirs):
        return [f"{path}: ours {ours!r}, Kafka's {theirs!r}"]
    return []


def test_we_have_the_specs_the_codec_needs() -> None:
    assert len(SPECS) >= 38
    assert {"JoinGroupRequest.json", "CreateTopicsResponse.json", "ConsumerGroupHeartbeatRequest.json"} \
        <= {p.name for p in SPECS}


@pytest.mark.parametrize("spec", SPECS, ids=[p.stem for p in SPECS])
def test_spec_states_kafkas_facts(spec: Path, kafka_specs: zipfile.ZipFile) -> None:
    text = kafka_specs.read(f"common/message/{spec.name}").decode()
    theirs = json.loads("\n".join(line for line in text.splitlines() if not line.strip().startswith("//")))
    ours = json.loads(spec.read_text())
    assert differences(facts(ours), facts(theirs), spec.stem) == []
