"""The warehouse: a folder of Parquet tables (one sub-folder each), appended to by ingest
and read by audit, metrics and history."""

from __future__ import annotations

import os
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from .tables import PARTITIONS


class Warehouse:
    def __init__(self, spark: SparkSession, root: str | os.PathLike[str]) -> None:
        self.spark, self.root = spark, Path(root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)

    def path(self, table: str) -> str:
        return str(self.root / table)

    def exists(self, table: str) -> bool:
        return (self.root / table / "_SUCCESS").exists()

    def read(self, table: str, schema: StructType) -> DataFrame:
        if not self.exists(table):
            return self.spark.createDataFrame([], schema)
        return self.spark.read.schema(schema).parquet(self.path(table))

    def append(self, table: str, df: DataFrame) -> None:
        df.write.mode("append").partitionBy(*PARTITIONS[table]).parquet(self.path(table))

    def replace(self, table: str, df: DataFrame) -> None:
        """Derived tables (rounds, violations) are recomputed, not appended."""
        df.write.mode("overwrite").partitionBy(*PARTITIONS[table]).parquet(self.path(table))
