"""Transcripts of Connect groups written by a script, for the pipeline's tests and
``bench/pipeline.py`` (beside recorded ones, each planted fault in one call): bodies encoded by the
project's codec (raw bytes included), Connect's embedded metadata and assignments by
``fakebroker.connect.embedded``. A clean script and each planted fault differ in one call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fakebroker.connect.embedded import assignment_bytes, metadata_bytes
from fakebroker.protocol import default_registry
from fakebroker.protocol.framing import encode_request, encode_response
from fakebroker.exchange.transcript import dumps, new_header

REG = default_registry()
VERSIONS = {"JoinGroup": 7, "SyncGroup": 5, "Heartbeat": 4, "LeaveGroup": 4,
            "ConnectGroupHeartbeat": 0}


def units(*names: str) -> list[tuple[str, int]]:
    """Connect's unit names ("c1" connector, "c1-0" task) as (connector, task)."""
    out = []
    for n in names:
        c, _, t = n.rpartition("-")
        out.append((c, int(t)) if c and t.isdigit() else (n, -1))
    return out


class Script:
    def __init__(self, group: str = "g1", protocol: str = "compatible", version: int = 1) -> None:
        self.group, self.protocol, self.version = group, protocol, version
        self.lines: list[dict[str, Any]] = [new_header("hand", id="pipeline-test", clock="virtual")]
        self.now_ms = 0
        self.cids: dict[str, int] = {}
        self.seq = 0

    def _line(self, kind: str, conn: str, key: int, version: int, cid: int, body: dict[str, Any],
              raw: bytes) -> None:
        self.seq += 1
        line: dict[str, Any] = {"kind": kind, "seq": self.seq, "conn": conn, "correlation_id": cid,
                                "api_key": key, "api": REG.api_name(key), "version": version}
        if kind == "request":
            line["client_id"] = conn
        line.update(body=body, raw=raw.hex(), vtime_ms=self.now_ms, time=1_700_000_000 + self.now_ms / 1000)
        self.lines.append(line)

    def exchange(self, member: str, api: str, req: dict[str, Any], resp: dict[str, Any],
                 took_ms: int = 5) -> None:
        key, version = REG.by_api_name(api), VERSIONS[api]
        cid = self.cids[member] = self.cids.get(member, 0) + 1
        rq = REG.request(key).cls.from_json(req)
        self._line("request", member, key, version, cid, rq.to_json(),
                   encode_request(REG, rq, version, cid, member, size_prefix=True))
        self.now_ms += took_ms
        rs = REG.response(key).cls.from_json(resp)
        self._line("response", member, key, version, cid, rs.to_json(),
                   encode_response(REG, rs, version, cid, size_prefix=True))

    def wait(self, ms: int) -> None:
        self.now_ms += ms

    # ------------------------------------------------------------ classic Connect group

    def join(self, member: str, generation: int, leader: str, owned: tuple[str, ...] = (),
             members: dict[str, tuple[str, ...]] | None = None, session_ms: int = 10000) -> None:
        meta = metadata_bytes(self.version, f"http://{member}:8083/", 1, units(*owned) or None)
        self.exchange(member, "JoinGroup", {
            "GroupId": self.group, "SessionTimeoutMs": session_ms, "RebalanceTimeoutMs": 60000,
            "MemberId": member, "GroupInstanceId": None, "ProtocolType": "connect",
            "Protocols": [{"Name": self.protocol, "Metadata": meta.hex()}]}, {
            "ThrottleTimeMs": 0, "ErrorCode": 0, "GenerationId": generation,
            "ProtocolName": self.protocol, "Leader": leader, "MemberId": member,
            "Members": [{"MemberId": m, "GroupInstanceId": None, "Metadata": metadata_bytes(
                self.version, f"http://{m}:8083/", 1, units(*o) or None).hex()}
                for m, o in (members or {}).items()]})

    def sync(self, member: str, generation: int, leader: str, assigned: tuple[str, ...] = (),
             revoked: tuple[str, ...] = (), delay_ms: int = 0) -> None:
        data = assignment_bytes(self.version, leader=leader, assigned=units(*assigned),
                                revoked=units(*revoked) if self.version else None, delay_ms=delay_ms)
        self.exchange(member, "SyncGroup", {
            "GroupId": self.group, "GenerationId": generation, "MemberId": member,
            "GroupInstanceId": None, "ProtocolType": "connect", "ProtocolName": self.protocol,
            "Assignments": []}, {
            "ThrottleTimeMs": 0, "ErrorCode": 0, "ProtocolType": "connect",
            "ProtocolName": self.protocol, "Assignment": data.hex()})

    def heartbeat(self, member: str, generation: int, error: int = 0) -> None:
        self.exchange(member, "Heartbeat", {"GroupId": self.group, "GenerationId": generation,
                                            "MemberId": member, "GroupInstanceId": None},
                      {"ThrottleTimeMs": 0, "ErrorCode": error})

    # ------------------------------------------------------------ the draft's connect group

    def connect_heartbeat(self, member: str, epoch: int, owned: tuple[str, ...],
                          answer_epoch: int, assigned: tuple[str, ...] | None, error: int = 0,
                          assignors: tuple[tuple[str, int, int], ...] = ()) -> None:
        def cat(names: tuple[str, ...]) -> dict[str, Any]:
            us = units(*names)
            return {"Connectors": [c for c, t in us if t == -1],
                    "Tasks": [{"ConnectorId": c, "TaskId": t} for c, t in us if t != -1]}
        self.exchange(member, "ConnectGroupHeartbeat", {
            "GroupId": self.group, "MemberId": member, "MemberEpoch": epoch, "InstanceId": None,
            "RebalanceTimeoutMs": 60000, "ServerAssignor": None,
            "ClientAssignors": [{"Name": n, "MinimumVersion": lo, "MaximumVersion": hi, "Reason": 0,
                                 "Version": hi, "Metadata": ""} for n, lo, hi in assignors],
            "ConnectorsAndTasks": cat(owned)}, {
            "ThrottleTimeMs": 0, "ErrorCode": error, "ErrorMessage": None, "MemberEpoch": answer_epoch,
            "HeartbeatIntervalMs": 3000,
            "Assignment": None if assigned is None else
            {"Error": 0, "ConnectorsAndTasks": cat(assigned), "Version": 2, "Metadata": ""}})

    def save(self, path: Path) -> Path:
        path.write_text("".join(dumps(line) + "\n" for line in self.lines), encoding="utf-8")
        return path
