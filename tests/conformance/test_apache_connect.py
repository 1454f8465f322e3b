"""The real Apache Kafka Connect 4.2.0 worker through the worker suite, once per
``connect.protocol``: the bundled targets ``fixtures/targets/apache-connect-*.toml`` (the
fake broker in proxy mode in front of a real Kafka, both started by the harness).

Each run is ``conformance run`` as a user runs it. The worker must come out certified: a
case it fails is evidence about the spec, our reading of it, or the harness, and belongs in
``DIVERGENCES`` below with its reason and transcript before this test may pass. Passing
cases carry their evidence (the transcript with the worker's own exchanges, a pcap, the
worker's log) in the Allure results.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.catalogue.requirements import default_catalogue
from conformance.harness.target import load_target
from tests.support.certification import run_certification

ROOT = Path(__file__).resolve().parents[2]
PROTOCOLS = ("eager", "compatible", "sessioned")
# requirement id -> why the real worker is allowed another outcome than PASS.
DIVERGENCES: dict[str, str] = {
    "CONN-INC-15": "SHOULD (NON-STRICT): a worker that comes to lead while its predecessor's delay runs "
                   "assigns the unaccounted work at once with delay 0; Connect 4.2.0's assignor keeps no "
                   "delay state from assignments it received (its previous-assignment view is cleared "
                   "when it did not lead the last generation), where KIP-415's 'Leader leaves' / 'Leader "
                   "bounces' scenarios keep the remaining delay (fixtures/targets/apache-connect.md).",
    "CONN-DOWN-02": "SHOULD (NON-STRICT; compatible and sessioned): when an eager-only member joins, Connect "
                    "4.2.0's leader hands out full v0 assignments in the very first downgraded round "
                    "(WorkerCoordinator.onLeaderElected goes straight to the EagerAssignor when the group's "
                    "protocol is `default`), without KIP-415's one-time empty round and second rebalance "
                    "(fixtures/targets/apache-connect.md).",
    "CONN-DOWN-03": "SHOULD (NON-STRICT; compatible and sessioned): a 4.2.0 worker that ran work under v1/v2 "
                    "keeps running it when its group falls back to `default`, its first v0 assignment listing "
                    "nothing (log: 'protocol version 0 ... connectorIds=[], taskIds=[]', conn-a and conn-b "
                    "RUNNING until it stops): WorkerCoordinator revokes under EAGER only in onJoinPrepare, where "
                    "the protocol is still the old one, and DistributedHerder.startWork only starts what is new "
                    "(fixtures/targets/apache-connect.md).",
}


# No xdist_group: under `--dist loadgroup` the three runs spread over the suite's workers
# instead of queueing on one (a run is mostly a real worker's waits, and each starts its own
# Kafka and fake brokers, so two side by side share nothing).
@pytest.mark.realkafka
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_real_connect_worker_is_certified(protocol: str, tmp_path: Path) -> None:
    target_file = ROOT / "fixtures" / "targets" / f"apache-connect-{protocol}.toml"
    target = load_target(target_file)
    reports = tmp_path / "reports"
    # As `make certify` runs it (-n auto: two test processes per core for a real-clock
    # target, sharing one real Kafka): the cases wait on a real worker's clock far more
    # than they compute.
    r = run_certification(target_file, reports, suite="worker", workers="auto")
    tail = (r.stdout + r.stderr)[-4000:]
    doc = json.loads((reports / "results.json").read_text())
    outcomes = {x["id"]: x["outcome"] for x in doc["results"]}

    # Every worker requirement of the claimed protocols ran (none BROKEN, none missing) ...
    binding = {req.id for req in default_catalogue().requirements
               if "worker" in req.binds and set(req.protocols) & target.protocols}
    ran = {x["requirement"] for x in doc["results"]}
    assert binding and binding <= ran, f"cases missing: {sorted(binding - ran)}"
    assert doc["left_out"] == [], doc["left_out"]
    unexpected = {x["id"]: f"{x['outcome']}: {x['message'][:1500]}" for x in doc["results"]
                  if x["outcome"] not in ("PASS", "NOT-APPLICABLE") and x["requirement"] not in DIVERGENCES}
    assert not unexpected, f"the real worker ({protocol}) diverges: {unexpected}\n{tail}"
    failed = any(x["outcome"] == "FAIL" for x in doc["results"] if x["requirement"] in DIVERGENCES)
    assert r.returncode == (1 if failed else 0), tail
    passed = [i for i, o in outcomes.items() if o == "PASS"]
    assert len(passed) >= 12, f"only {len(passed)} cases passed:\n{tail}"

    # ... and a passing case carries the worker's own exchanges as evidence.
    # (transcripts are attached in the project's transcript format: JSON lines)
    lines = [json.loads(line) for p in (reports / "allure-results").glob("*-attachment.jsonl")
             for line in p.read_text().splitlines() if line.strip()]
    worker_lines = [e for e in lines if isinstance(e, dict) and str(e.get("conn", "")).startswith("worker ")]
    assert {e["api"] for e in worker_lines} >= {"JoinGroup", "SyncGroup", "Heartbeat"}
    assert any(p.suffix == ".pcap" for p in (reports / "allure-results").iterdir())


@pytest.mark.realkafka
def test_a_worker_that_cannot_start_is_broken_with_its_log(tmp_path: Path) -> None:
    """The worker's command fails at once (an unknown connect.protocol): every case is BROKEN,
    quickly, saying why with the worker's own output; nothing is left running. Without a
    seed command (a target of one's own), the first worker to fail is the seeding one."""
    text = (ROOT / "fixtures" / "targets" / "apache-connect-sessioned.toml").read_text()
    assert "--protocol {connect_protocol}" in text
    text = "\n".join(line for line in text.splitlines() if not line.startswith("seed_command ="))
    broken = tmp_path / "broken.toml"
    broken.write_text(text.replace("--protocol {connect_protocol}", "--protocol not-a-protocol"))
    reports = tmp_path / "reports"
    r = run_certification(broken, reports, "-k", "CLS-W-01 or CONN-PROT-01", suite="worker",
                          timeout_s=300)
    assert r.returncode == 3, r.stdout[-3000:]  # BROKEN (fakebroker.exit_codes)
    results = {x["requirement"]: x for x in json.loads((reports / "results.json").read_text())["results"]}
    for rid in ("CLS-W-01", "CONN-PROT-01"):
        assert results[rid]["outcome"] == "BROKEN"
        assert "seeding worker exited (2), 3 times" in results[rid]["message"]
        assert "invalid choice: 'not-a-protocol'" in results[rid]["message"]  # its own output
