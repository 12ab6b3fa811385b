"""``spark.read.format("commitlog").load(folder)``: a Spark 4 Python data source over CommitLog
segments. Partitions are the driver's (path, start, end) ranges; each task streams its range
through ``segments.read_range`` (bounded memory, whatever the segment size)."""

from __future__ import annotations

from collections.abc import Iterator

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from ops.spark.segments import Range, list_segments, ranges, read_range

SCHEMA = (
    "phys_offset long, size int, kind string, topic string, queue_id int, queue_offset long, "
    "store_timestamp long, keys string, uniq_key string, crc_ok boolean, digest long, "
    "store_host string"
)
DEFAULT_SPLIT = 256 << 20


class RangePartition(InputPartition):
    def __init__(self, rng: Range) -> None:
        super().__init__(rng)
        self.rng = rng


class CommitLogReader(DataSourceReader):
    def __init__(self, options: dict[str, str]) -> None:
        self.path = options["path"]
        self.split = int(options.get("splitBytes", DEFAULT_SPLIT))

    def partitions(self) -> list[InputPartition]:
        return [RangePartition(r) for r in ranges(list_segments(self.path), self.split)]

    def read(self, partition: InputPartition) -> Iterator[tuple]:
        for row in read_range(partition.rng):  # type: ignore[attr-defined]
            yield tuple(row)


class CommitLogDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "commitlog"

    def schema(self) -> str:
        return SCHEMA

    def reader(self, schema: object) -> DataSourceReader:
        return CommitLogReader(self.options)
