"""The audit: every invariant (one module each) run over every group's exchanges, the
groups spread over the executors (a shuffle by source and group id)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..ingest.frames import in_groups
from ..tables import VIOLATION
from . import (double_ownership, draft_revocation, generations_monotonic, revoke_before_reassign,
               scheduled_delay, session_timeout, stale_generation)
from .group import Ex, exchanges

CHECKS: dict[str, Callable[[list[Ex]], Iterator[dict[str, Any]]]] = {
    m.NAME: m.check for m in (double_ownership, generations_monotonic, revoke_before_reassign,
                              scheduled_delay, stale_generation, session_timeout, draft_revocation)
}
COLUMNS = VIOLATION.fieldNames()


def audit_group(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """All violations in one group's exchanges (plain Python: the baseline bench reuses it)."""
    exs = exchanges(records)
    return [v for check in CHECKS.values() for v in check(exs)]


def _audit(pdf: pd.DataFrame) -> pd.DataFrame:
    found = audit_group(pdf.to_dict("records"))
    return pd.DataFrame(found, columns=COLUMNS) if found else pd.DataFrame(columns=COLUMNS)


def audit(exchanges_df: DataFrame) -> DataFrame:
    """Violations of every group in the exchanges."""
    return in_groups(exchanges_df.where(F.col("group_id").isNotNull()), ["source", "group_id"],
                     "ref", _audit, VIOLATION)
