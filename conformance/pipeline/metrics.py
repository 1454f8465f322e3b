"""Rebalance metrics: one row per group and round (classic generation, or the draft's
member epoch): duration, units moved, what stopped and for how long."""

from __future__ import annotations

from typing import Any

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .audit.group import Ex, exchanges, rounds
from .ingest.frames import in_groups

REBALANCE = ("source string, group_id string, generation int, mode string, members int, "
             "start_ms double, duration_ms double, units_moved int, units_paused int, "
             "pause_ms double, span_ms double")
COLUMNS = [c.split()[0] for c in REBALANCE.split(", ")]


def classic_rounds(exs: list[Ex]) -> list[dict[str, Any]]:
    rs = rounds(exs)
    out = []
    for i, r in enumerate(rs):
        if r.first_join_ms is None or r.last_sync_ms is None or not r.syncs:
            continue
        duration = max(0.0, r.last_sync_ms - r.first_join_ms)
        owner_before = {u: m for m, us in r.before.items() for u in us}
        moved = sum(1 for m, us in r.after.items() for u in us if owner_before.get(u, m) != m)
        if r.incremental:
            revoked = set().union(*(s.revoked for s in r.syncs.values()))
            nxt = rs[i + 1] if i + 1 < len(rs) else None
            # Revoked work stops now and runs again once the next round assigns it.
            pause = ((nxt.last_sync_ms or r.last_sync_ms) - r.first_join_ms) if revoked and nxt else 0.0
            mode, paused = "incremental", len(revoked)
        else:  # eager: every member stops all its work from its JoinGroup to its assignment
            mode, paused, pause = "eager", len(set().union(*r.before.values(), *r.after.values())), duration
        out.append({"generation": r.generation, "mode": mode, "members": len(r.members),
                    "start_ms": r.first_join_ms, "duration_ms": duration, "units_moved": moved,
                    "units_paused": paused, "pause_ms": pause})
    return out


def draft_rounds(exs: list[Ex]) -> list[dict[str, Any]]:
    """The draft's rounds: from the first answer carrying a new epoch to the last member's
    first answer at that epoch (everyone reached the target)."""
    firsts: dict[int, dict[str, Ex]] = {}
    owned: dict[str, set[str]] = {}
    moved: dict[int, int] = {}
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
    out = []
    for epoch, by_member in sorted(firsts.items()):
        times = [x.resp_ms for x in by_member.values() if x.resp_ms is not None]
        if times:
            out.append({"generation": epoch, "mode": "draft", "members": len(by_member),
                        "start_ms": min(times), "duration_ms": max(times) - min(times),
                        "units_moved": moved.get(epoch, 0), "units_paused": 0, "pause_ms": 0.0})
    return out


def _group(pdf: pd.DataFrame) -> pd.DataFrame:
    exs = exchanges(pdf.to_dict("records"))
    stamps = [t for e in exs for t in (e.req_ms, e.resp_ms) if t is not None]
    span = (max(stamps) - min(stamps)) if stamps else 0.0
    rows = [{**r, "source": exs[0].source, "group_id": exs[0].group_id, "span_ms": span}
            for r in classic_rounds(exs) + draft_rounds(exs)]
    return pd.DataFrame(rows, columns=COLUMNS) if rows else pd.DataFrame(columns=COLUMNS)


def rebalances(ex: DataFrame) -> DataFrame:
    return in_groups(ex.where(F.col("group_id").isNotNull()), ["source", "group_id"], "ref",
                     _group, REBALANCE)
