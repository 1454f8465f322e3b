"""The warehouse: a folder of Parquet tables (one sub-folder each), appended to by ingest
and read by audit, metrics and history."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pyarrow.parquet as pq
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

    # ------------------------------------------------------------ one pass, two tables

    @property
    def _staging(self) -> Path:
        return self.root / "_staging"  # "_": never listed as a table's data

    def stage(self, df: DataFrame, partitions: list[str]) -> Path:
        """Write ``df`` once into the staging folder, split by ``partitions`` (the first one
        says which table a row belongs to), so one pass feeds several tables."""
        self.discard_staged()
        df.write.partitionBy(*partitions).parquet(str(self._staging))
        return self._staging

    def adopt_staged(self, folder: Path, table: str) -> int:
        """Move a staged sub-folder's files into ``table`` (their partition folders are the
        table's: a rename, no rewrite); returns their row count, from the Parquet footers.
        The files may hold columns the table's schema does not name (read by schema, they
        are not seen)."""
        rows = self.staged_rows(folder)
        for src in sorted(folder.rglob("*")) if folder.is_dir() else ():
            if not src.is_file():
                continue
            dst = self.root / table / src.relative_to(folder)
            dst.parent.mkdir(parents=True, exist_ok=True)
            os.replace(src, dst)
        (self.root / table).mkdir(parents=True, exist_ok=True)
        (self.root / table / "_SUCCESS").touch()
        return rows

    @staticmethod
    def staged_rows(folder: Path) -> int:
        """Rows of a staged sub-folder, from its Parquet footers (no Spark job)."""
        return sum(pq.read_metadata(f).num_rows for f in folder.rglob("*.parquet")) if folder.is_dir() else 0

    def read_staged(self, folder: Path, schema: StructType) -> DataFrame:
        if not folder.is_dir():
            return self.spark.createDataFrame([], schema)
        return self.spark.read.schema(schema).parquet(str(folder))

    def discard_staged(self) -> None:
        shutil.rmtree(self._staging, ignore_errors=True)
