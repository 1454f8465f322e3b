"""Which API versions the installed tshark dissects as Kafka, measured on real frames.

    python bench/tshark_versions.py            # a markdown table (docs: "Pcaps in Wireshark")
    python bench/tshark_versions.py --json

The frames are real ones: every golden transcript (fixtures/golden), the capture of Apache
Kafka Connect 4.2.0's worker (fixtures/recorded), and, recorded here, a kafka-python and a
librdkafka (confluent-kafka) consumer joining a group on the fake broker (their bootstrap:
ApiVersions, Metadata, FindCoordinator at the versions they choose). Transcripts become pcaps
through the export ``fakebroker pcap`` and the Allure attachments use (the broker on 9092). tshark
reads each pcap; a frame is *malformed* when its Kafka dissector raised (``_ws.malformed``).
A response's version is its request's (Kafka's responses do not carry it).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fakebroker.protocol import default_registry  # noqa: E402
from fakebroker.script.export import write_transcript_pcap  # noqa: E402
from fakebroker.exchange.transcript import Transcript, load  # noqa: E402

FIELDS = ("frame.number", "kafka.api_key", "kafka.api_version", "kafka.request_frame", "_ws.malformed")


def tshark_rows(tshark: str, pcap: Path) -> list[dict[str, str]]:
    """Kafka frames of ``pcap``: one dict per frame with FIELDS (empty when absent)."""
    out = subprocess.run([tshark, "-r", str(pcap), "-Y", "kafka", "-T", "fields",
                          *(x for f in FIELDS for x in ("-e", f))], capture_output=True, text=True, check=True)
    return [dict(zip(FIELDS, line.split("\t"))) for line in out.stdout.splitlines()]


def tally(rows: list[dict[str, str]], counts: dict[tuple[int, int, str], list[int]]) -> None:
    versions = {r["frame.number"]: r["kafka.api_version"] for r in rows if not r["kafka.request_frame"]}
    for r in rows:
        if not r["kafka.api_key"]:
            continue  # a frame the dissector could not even start on
        response = bool(r["kafka.request_frame"])
        version = versions.get(r["kafka.request_frame"], "") if response else r["kafka.api_version"]
        if not version:
            continue
        c = counts[(int(r["kafka.api_key"].split(",")[0]), int(version.split(",")[0]),
                    "response" if response else "request")]
        c[0] += 1
        c[1] += bool(r["_ws.malformed"])


def real_clients() -> dict[str, Transcript]:
    """A group join by kafka-python and by librdkafka on a fake broker, recorded."""
    from fakebroker.pytest_plugin import start_broker
    from fakebroker.script.recorder import Recorder
    out = {}
    for client in ("kafka-python", "confluent-kafka"):
        rec = Recorder()
        broker = start_broker(recorder=rec)
        try:
            _join(client, broker.bootstrap)
        finally:
            broker.stop()
        out[client] = rec.transcript()
    return out


def _join(client: str, bootstrap: str, deadline_s: float = 30.0) -> None:
    end = time.monotonic() + deadline_s
    if client == "kafka-python":
        from kafka import KafkaConsumer
        consumer = KafkaConsumer("test", bootstrap_servers=bootstrap, group_id="tshark-kp")
        try:
            while not consumer.assignment() and time.monotonic() < end:
                consumer.poll(timeout_ms=200)
        finally:
            consumer.close()
        return
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "tshark-rdkafka"})
    try:
        c.subscribe(["test"])
        while not c.assignment() and time.monotonic() < end:
            c.poll(0.2)
    finally:
        c.close()


def measure(tshark: str) -> dict[tuple[int, int, str], list[int]]:
    registry = default_registry()
    counts: dict[tuple[int, int, str], list[int]] = defaultdict(lambda: [0, 0])
    with tempfile.TemporaryDirectory() as tmp:
        transcripts = {p.stem: load(p, registry) for p in sorted((ROOT / "fixtures" / "golden").glob("*.jsonl"))}
        for name, transcript in {**transcripts, **real_clients()}.items():
            pcap = Path(tmp) / (name + ".pcap")
            write_transcript_pcap(transcript, registry, pcap)
            tally(tshark_rows(tshark, pcap), counts)
    for pcap in sorted((ROOT / "fixtures" / "recorded").glob("*.pcap")):
        tally(tshark_rows(tshark, pcap), counts)
    return counts


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", action="store_true", help="one object per API version instead of a table")
    args = p.parse_args()
    tshark = shutil.which("tshark")
    if tshark is None:
        print("tshark not found (Debian package tshark)", file=sys.stderr)
        return 2
    version = subprocess.run([tshark, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    counts = measure(tshark)
    names = {t.api_key: t.name.removesuffix("Request") for t in default_registry().types.values()
             if t.name.endswith("Request") and getattr(t, "api_key", None) is not None}
    rows = []
    for key, ver in sorted({(k, v) for k, v, _ in counts}):
        req, resp = counts.get((key, ver, "request"), [0, 0]), counts.get((key, ver, "response"), [0, 0])
        rows.append({"api": names.get(key, str(key)), "api_key": key, "version": ver,
                     "requests": req[0], "requests_malformed": req[1],
                     "responses": resp[0], "responses_malformed": resp[1],
                     "dissected": req[1] == 0 and resp[1] == 0})
    if args.json:
        print(json.dumps({"tshark": version, "versions": rows}, indent=1))
        return 0
    print(f"{version}\n")
    print("| API | version | requests (malformed) | responses (malformed) | dissected |")
    print("| --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['api']} ({r['api_key']}) | v{r['version']} | {r['requests']} ({r['requests_malformed']}) "
              f"| {r['responses']} ({r['responses_malformed']}) | {'yes' if r['dissected'] else '**no**'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
