"""One group's exchanges as the audit reads them from Spark rows: cleaned of pandas/numpy
values, then the invariants' own model (``conformance.invariants.rounds``)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from ...invariants.rounds import (FENCED, Ex, Group, Round, Sync, in_wire_order, live_heartbeats, rounds,
                                  violation)

__all__ = ["FENCED", "Ex", "Group", "Round", "Sync", "exchanges", "live_heartbeats", "rounds", "violation"]


def _clean(v: Any) -> Any:
    if v is pd.NA or isinstance(v, float) and math.isnan(v):
        return None
    if isinstance(v, np.ndarray):
        return [_clean(x) for x in v.tolist()]
    if isinstance(v, list):
        return [_clean(x) for x in v]
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, np.generic):
        return v.item()
    return v


def exchanges(records: Iterable[dict[str, Any]]) -> list[Ex]:
    """Rows in wire order (by the line/frame of the answer, then of the request)."""
    return in_wire_order({k: _clean(v) for k, v in r.items()} for r in records)
