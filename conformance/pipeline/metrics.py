"""The ``rounds`` table: one row per group and rebalance round (classic generation, or the
draft's member epoch): who took part, the leader and protocol, who was given and who gave
up what, and the metrics (duration, units moved, what stopped and for how long).

Like the round checks of the audit, Python sees only a group's JoinGroup, SyncGroup and
draft heartbeat rows; the span of the group's traffic (for rebalances per hour) is a Spark
aggregate over every row."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from .audit.group import Ex, Round, exchanges, rounds
from .ingest.frames import in_groups
from .tables import ROUND

PER_GROUP = StructType([f for f in ROUND.fields if f.name != "span_ms"])  # span: joined after


def _by_member(units: dict[str, set[str]]) -> list[dict[str, Any]]:
    return [{"member": m, "units": sorted(u)} for m, u in sorted(units.items()) if u]


def _unit_pause(unit: str, cause: str, start: float | None, end: float | None) -> dict[str, Any]:
    """One stretch of time a unit ran nowhere; ``end`` None: not running again by the end of
    the recording (how long is not known, so no length is claimed)."""
    ms = None if start is None or end is None else max(0.0, end - start)
    return {"unit": unit, "cause": cause, "from_ms": start, "to_ms": end, "ms": ms}


@dataclass
class Work:
    """One classic round's units as the metrics count them: who owned what entering it and
    after it, who was given and who gave up what, and when its last assignment was answered."""

    before: dict[str, set[str]]
    after: dict[str, set[str]]
    assigned: dict[str, set[str]]
    revoked: dict[str, set[str]]
    incremental: bool
    end_ms: float


def _connect_work(r: Round) -> Work | None:
    if not r.syncs or r.last_sync_ms is None:
        return None
    return Work(r.before, r.after, {m: s.assigned for m, s in r.syncs.items()},
                {m: s.revoked for m, s in r.syncs.items()}, r.incremental, r.last_sync_ms)


def consumer_work(rs: list[Round], exs: list[Ex]) -> dict[int, Work]:
    """A consumer group's rounds (no Connect syncs) from its decoded partitions, by
    generation. A consumer's assignment is complete (eager and cooperative alike), so what a
    member owned entering the round (its JoinGroup's owned partitions, KIP-429's
    subscription v1+, else what it was last given) and is not given again, it revoked; an
    eager member revokes everything before it joins (the eager pauses cover that)."""
    given: dict[int, dict[str, set[str]]] = {}
    plans: dict[int, list[dict[str, Any]]] = {}
    answered = _sync_answers(exs)
    for e in exs:
        if e.api == "SyncGroup" and e.error_code == 0 and e.generation is not None \
                and e.assignment_version is None:
            if e.assigned is not None:
                given.setdefault(e.generation, {})[e.member_id] = e.units("assigned")
            if e.plan:
                plans[e.generation] = e.plan
    out: dict[int, Work] = {}
    owned: dict[str, set[str]] = {}
    for r in rs:
        got = dict(given.get(r.generation, {}))
        for p in plans.get(r.generation, ()):  # a member whose own answer is not in the recording
            if p.get("member") in r.members:
                got.setdefault(p["member"], set(p.get("assigned") or ()))
        if r.syncs or not got or r.generation not in answered:
            continue
        owned = {m: u for m, u in owned.items() if m in r.members or not r.members}  # a member not in it left
        for j in r.joins:
            if j.owned is not None and j.resp_member_id:
                owned[j.resp_member_id] = j.units("owned")
        before = {m: set(u) for m, u in owned.items()}
        owned.update(got)
        incremental = "cooperative" in (r.protocol or "")  # KIP-429's assignors revoke in steps
        revoked = {m: before.get(m, set()) - u for m, u in got.items()} if incremental else {}
        out[r.generation] = Work(before, {m: set(u) for m, u in owned.items()}, got, revoked, incremental,
                                 answered[r.generation])
    return out


def _given_back(works: list[Work | None], since: int, unit: str) -> float | None:
    """When round ``since`` or a later one assigns ``unit`` again (that round's last
    assignment answer). The revoking round itself gives it out only when it breaks KIP-415's
    rule (CONN-INV-02): the unit then runs again, on its new owner, at once."""
    for w in works[since:]:
        if w is not None and any(unit in us for us in w.assigned.values()):
            return w.end_ms
    return None


def _sync_answers(exs: list[Ex]) -> dict[int, float]:
    """Each generation's last accepted SyncGroup answer, whatever the protocol (a consumer
    group's round whose partitions are not decoded ends here too)."""
    out: dict[int, float] = {}
    for e in exs:
        if e.api == "SyncGroup" and e.error_code == 0 and e.generation is not None and e.resp_ms is not None:
            out[e.generation] = max(out.get(e.generation, e.resp_ms), e.resp_ms)
    return out


def classic_rounds(exs: list[Ex]) -> list[dict[str, Any]]:
    """The classic rounds with, per round, each unit's time running nowhere (``pauses``):
    eager stop-the-world (every unit from the round's first JoinGroup to its last
    assignment), an incremental revocation (from the revoking round's first JoinGroup to
    the answer that gives the unit out again) and lost work (from the first round without
    its owner to the answer that gives it out again, KIP-415's scheduled delay included).
    A round's ``units_paused`` and ``pause_ms`` (the longest) are those of the pauses it
    started, or, for lost work, ended. Units are Connect's connectors and tasks, or a
    consumer group's partitions (``consumer_work``); a round whose units are not decoded
    (bytes no decoder reads) gets its members and times, its unit columns null."""
    rs = rounds(exs)
    answered = _sync_answers(exs)
    consumer = consumer_work(rs, exs)
    works = [_connect_work(r) or consumer.get(r.generation) for r in rs]
    out = []
    # Each unit's last owner in any earlier round, and since when a unit whose owner left
    # the group has run nowhere (KIP-415: lost work waits for the scheduled delay).
    last_owner: dict[str, str] = {}
    lost_since: dict[str, float] = {}
    for i, (r, w) in enumerate(zip(rs, works)):
        for u, m in last_owner.items():
            if r.members and m not in r.members and r.first_join_ms is not None:
                lost_since.setdefault(u, r.first_join_ms)
        if r.first_join_ms is None:
            continue
        base = {"generation": r.generation, "protocol": r.protocol, "leader": r.leader,
                "member_ids": sorted(r.members), "members": len(r.members), "start_ms": r.first_join_ms}
        if w is None:  # units not decoded: the round's times only, if it completed
            end = answered.get(r.generation)
            if end is not None and not r.syncs:
                eager = "cooperative" not in (r.protocol or "")
                duration = max(0.0, end - r.first_join_ms)
                out.append({**base, "mode": "eager" if eager else "incremental", "end_ms": end,
                            "duration_ms": duration, "units_moved": None, "units_paused": None,
                            "pause_ms": duration if eager else None, "assigned": [], "revoked": [],
                            "revocations": None, "pauses": []})
            continue
        duration = max(0.0, w.end_ms - r.first_join_ms)
        owner_before = {**last_owner, **{u: m for m, us in w.before.items() for u in us}}
        moved = sum(1 for m, us in w.after.items() for u in us if owner_before.get(u, m) != m)
        given = {u for us in w.after.values() for u in us}
        pauses = [_unit_pause(u, "lost", lost_since.pop(u), w.end_ms) for u in sorted(given & set(lost_since))]
        last_owner.update({u: m for m, us in w.after.items() for u in us})
        if w.incremental:
            mode = "incremental"
            pauses += [_unit_pause(u, "revoked", r.first_join_ms, _given_back(works, i, u))
                       for u in sorted(set().union(*w.revoked.values()))]
        else:  # eager: every member stops all its work from its JoinGroup to its assignment
            mode = "eager"
            pauses += [_unit_pause(u, "eager", r.first_join_ms, w.end_ms)
                       for u in sorted(set().union(*w.before.values(), *w.after.values()) - {p["unit"] for p in pauses})]
        out.append({**base, "mode": mode, "end_ms": w.end_ms, "duration_ms": duration,
                    "units_moved": moved, "units_paused": len(pauses),
                    # null: a unit it stopped does not run again by the end of the recording
                    "pause_ms": None if any(p["ms"] is None for p in pauses) else max(
                        (p["ms"] for p in pauses), default=0.0),
                    "assigned": _by_member(w.assigned), "revoked": _by_member(w.revoked),
                    "revocations": sum(len(u) for u in w.revoked.values()), "pauses": pauses})
    return out


def draft_rounds(exs: list[Ex]) -> list[dict[str, Any]]:
    """The draft's rounds: from the first answer carrying a new epoch to the last member's
    first answer at that epoch (everyone reached the target)."""
    firsts: dict[int, dict[str, Ex]] = {}
    owned: dict[str, set[str]] = {}
    moved: dict[int, int] = {}
    given: dict[int, dict[str, set[str]]] = {}
    for e in exs:
        if e.api != "ConnectGroupHeartbeat" or e.error_code != 0 or e.resp_member_epoch is None:
            continue
        if e.owned is not None:
            owned[e.member_id] = e.units("owned")
        epoch = e.resp_member_epoch
        if epoch > 0 and e.member_id not in firsts.setdefault(epoch, {}):
            firsts[epoch][e.member_id] = e
        new = e.units("assigned") - owned.get(e.member_id, set())
        moved[epoch] = moved.get(epoch, 0) + len(new)
        if new:
            given.setdefault(epoch, {}).setdefault(e.member_id, set()).update(new)
    out = []
    for epoch, by_member in sorted(firsts.items()):
        times = [x.resp_ms for x in by_member.values() if x.resp_ms is not None]
        if times:
            out.append({"generation": epoch, "mode": "draft", "protocol": None, "leader": None,
                        "member_ids": sorted(by_member), "members": len(by_member),
                        "start_ms": min(times), "end_ms": max(times), "duration_ms": max(times) - min(times),
                        "units_moved": moved.get(epoch, 0), "units_paused": 0, "pause_ms": 0.0,
                        "assigned": _by_member(given.get(epoch, {})), "revoked": [], "revocations": 0,
                        "pauses": []})
    return out


def _group(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    exs = exchanges(records)
    return [{**r, "source": exs[0].source, "group_id": exs[0].group_id}
            for r in classic_rounds(exs) + draft_rounds(exs)]


def rounds_table(ex: DataFrame) -> DataFrame:
    """One row per round of every group in the exchanges, with ``span_ms``: how long the
    group's recorded traffic lasts (the denominator of rebalances per hour)."""
    from .audit import ROUND_APIS, ROUND_COLUMNS
    groups = ex.where(F.col("group_id").isNotNull())
    per_round = in_groups(groups.where(F.col("api").isin(*ROUND_APIS)).select(*ROUND_COLUMNS),
                          ["source", "group_id"], "ref", _group, PER_GROUP)
    stamps = F.coalesce(F.col("req_vtime_ms").cast("double"), F.col("req_time") * 1000.0)
    answers = F.coalesce(F.col("resp_vtime_ms").cast("double"), F.col("resp_time") * 1000.0)
    span = groups.groupBy("source", "group_id").agg(
        (F.greatest(F.max(stamps), F.max(answers)) - F.least(F.min(stamps), F.min(answers))).alias("span_ms"))
    return per_round.join(span, ["source", "group_id"], "left").withColumn(
        "span_ms", F.coalesce("span_ms", F.lit(0.0))).select(*ROUND.fieldNames())
