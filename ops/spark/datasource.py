"""``spark.read.format("commitlog").load(folder)``: a Spark 4 Python data source over CommitLog
segments. Partitions are the driver's (path, start, end) ranges; each task streams its range
through ``reader.read_range`` (bounded memory, whatever the segment size)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from ops.spark.parts import SCHEMA, arrow_schema, record_batch
from ops.spark.reader import read_range
from ops.spark.segments import Range, Segment, list_segments, local_path, ranges

DEFAULT_SPLIT = 256 << 20
BATCH_ROWS = 8192


class RangePartition(InputPartition):
    def __init__(self, rng: Range) -> None:
        super().__init__(rng)
        self.rng = rng


class CommitLogReader(DataSourceReader):
    def __init__(self, options: dict[str, str]) -> None:
        self.options = options
        self.split = int(options.get("splitBytes", DEFAULT_SPLIT))

    def partitions(self) -> list[InputPartition]:
        if "segments" in self.options:
            segments = [Segment(*s) for s in json.loads(self.options["segments"])]
        else:
            segments = list_segments(local_path(self.options["path"]))
        return [RangePartition(r) for r in ranges(segments, self.split)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        """Arrow record batches of BATCH_ROWS rows: much cheaper than pickling one tuple per
        record into the JVM."""
        schema = arrow_schema()
        rows: list[tuple] = []
        for row in read_range(partition.rng):  # type: ignore[attr-defined]
            rows.append(row)
            if len(rows) >= BATCH_ROWS:
                yield record_batch(rows, schema)
                rows = []
        if rows:
            yield record_batch(rows, schema)


class CommitLogDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "commitlog"

    def schema(self) -> str:
        return SCHEMA

    def reader(self, schema: object) -> DataSourceReader:
        return CommitLogReader(self.options)
