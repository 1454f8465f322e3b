"""Writes the hostile-input corpus (tests/data/hostile/): run it to regenerate the files.

    python -m tests.hostile.make_corpus

Every file is a kind of input a careless user or a crash produces; ``test_corpus`` runs each
command that reads that kind of file on it. Big or deep files are made here, not by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parents[1] / "data" / "hostile"
HUGE = "1" + "0" * 5000  # past Python's 4300-digit int parsing limit
DEEP = 20_000  # past any recursion limit


def _golden_lines() -> list[str]:
    src = Path(__file__).resolve().parents[2] / "fixtures" / "golden" / "CLS-COMMIT-12.jsonl"
    return src.read_text(encoding="utf-8").splitlines(keepends=True)


def _heartbeat_spec(fields: list[dict[str, object]]) -> str:
    return json.dumps({"apiKey": 900, "type": "request", "listeners": ["broker"],
                       "name": "HostileRequest", "validVersions": "0",
                       "flexibleVersions": "none", "fields": fields}, indent=1)


def _field(name: str, type_: str = "string") -> dict[str, object]:
    return {"name": name, "type": type_, "versions": "0+", "about": "x"}


def files() -> dict[str, bytes]:
    golden = _golden_lines()
    out: dict[str, str | bytes] = {
        # targets (TOML)
        "target-not-utf8.toml": b'name = "caf\xe9"\nkind = "coordinator"\n',
        "target-huge-int.toml": f"name = \"t\"\nkind = \"coordinator\"\nx = {HUGE}\n",
        "target-deep-array.toml": "x = " + "[" * DEEP + "]" * DEEP + "\n",
        "target-deep-table.toml": "x = " + "{a = " * DEEP + "1" + "}" * DEEP + "\n",
        "target-broken.toml": "name = \n",
        # transcripts (JSON Lines)
        "transcript-not-utf8.jsonl": golden[0].encode() + b'{"kind":"close","conn":1,"by":"\xff"}\n',
        "transcript-huge-int.jsonl": golden[0] + golden[1].replace('"seq":1,', f'"seq":{HUGE},', 1),
        "transcript-deep.jsonl": golden[0] + '{"kind":"close","conn":' + "[" * DEEP + "]" * DEEP + "}\n",
        "transcript-not-json.jsonl": golden[0] + "{kind: close}\n",
        "transcript-only-torn.jsonl": golden[0][: len(golden[0]) // 2],
        # fault plans (YAML / JSON)
        "plan-huge-int.yaml": f"version: 1\nfaults:\n  - api: Heartbeat\n    action: {{delay_ms: {HUGE}}}\n",
        "plan-huge-int.json": f'{{"version": 1, "faults": [{{"api": "Heartbeat", "action": {{"delay_ms": {HUGE}}}}}]}}\n',
        "plan-deep.yaml": "version: 1\nfaults: " + "[" * DEEP + "]" * DEEP + "\n",
        "plan-deep.json": '{"version": 1, "faults": ' + "[" * DEEP + "]" * DEEP + "}\n",
        "plan-match-int-key.yaml": "version: 1\nfaults:\n  - api: Heartbeat\n    match: {1: 2}\n    action: {drop: true}\n",
        "plan-min-nan.yaml": "version: 1\nfaults:\n  - api: Heartbeat\n    match: {GenerationId: {min: .nan}}\n    action: {drop: true}\n",
        "plan-max-inf.json": '{"version": 1, "faults": [{"api": "Heartbeat", "match": {"GenerationId": {"max": Infinity}}, "action": {"drop": true}}]}\n',
        "plan-not-utf8.yaml": b"version: 1\nfaults: []\n# \xff\n",
        "plan-alias-bomb.yaml": "version: 1\n" + "".join(
            f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi"))
        .replace("b: &b [*a", "a: &a [\"lol\"]\nb: &b [*a", 1) + "faults: *i\n",
        "plan-alias-tall.yaml": "version: 1\nx: &x [1]\n" + "".join(f"x{i}: *x\n" for i in range(200))
        + "faults: []\n",
        # frames for `fakebroker encode` (JSON)
        "frame-not-utf8.json": b'{"kind": "request", "api": "Heartbeat", "version": 0, "body": {"GroupId": "\xff"}}\n',
        "frame-header-list.json": '{"kind": "request", "api": "ApiVersions", "version": 0, "header": [1], "body": {}}\n',
        "frame-huge-int.json": f'{{"kind": "request", "api": "ApiVersions", "version": {HUGE}, "body": {{}}}}\n',
        "frame-deep.json": '{"kind": "request", "api": "ApiVersions", "version": 0, "body": ' + "[" * DEEP + "]" * DEEP + "}\n",
        "frame-correlation-text.json": '{"kind": "request", "api": "ApiVersions", "version": 0, "header": {"CorrelationId": "x"}, "body": {}}\n',
        # --schemas directories
        "schemas-field-self/HostileRequest.json": _heartbeat_spec([_field("GroupId"), _field("Self")]),
        "schemas-field-collide/HostileRequest.json": _heartbeat_spec([_field("GroupId"), _field("GroupID")]),
        "schemas-broken-json/HostileRequest.json": '{"apiKey": 12, "type": "request", "name": "HeartbeatRequest",\n',
        "schemas-no-fields/Thing.json": '{"hello": "world"}\n',
        "schemas-huge-int/HostileRequest.json": f'{{"apiKey": {HUGE}, "type": "request"}}\n',
        "schemas-deep/HostileRequest.json": '{"apiKey": 12, "fields": ' + "[" * DEEP + "]" * DEEP + "}\n",
        "schemas-not-utf8/HostileRequest.json": b'{"apiKey": 12, "about": "\xff"}\n',
        "schemas-file.json": '{"hello": "world"}\n',
    }
    # A recording a crash cut mid-line: every complete line is good.
    out["transcript-torn.jsonl"] = "".join(golden[:-1]) + golden[-1][: len(golden[-1]) // 2]
    return {k: v if isinstance(v, bytes) else v.encode() for k, v in out.items()}


def main() -> None:
    for name, data in files().items():
        path = HERE / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    print(f"wrote {len(files())} file(s) to {HERE}")


if __name__ == "__main__":
    main()
