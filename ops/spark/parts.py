"""One log's records parsed straight into Parquet by the Python tasks: each task streams its
range through ``reader.read_range`` and writes one part file with pyarrow, named by the range's
start. No record crosses into the JVM: handing Arrow batches to Spark (the ``commitlog`` data
source) and letting Spark write them cost the JVM ~2x the Python parse's CPU (each batch
converted to rows, then re-encoded by Parquet's Java writer). The later questions read the
parts in Python too (``compare``); the master's parts are ``index.parquet`` for ad-hoc queries.

Each task returns only its range's figures (``RangeSummary``: messages, end, store hosts, its
corrupt record); ``summarise`` folds them into the side's figures on the driver, so the parse
itself answers what used to take three Spark queries over the parsed log.

No Spark import here: a task runs ``write_part``, the driver ``parse_to_parquet`` with the
session it is given.
"""

from __future__ import annotations

import functools
import os
import shutil
import uuid
from pathlib import Path
from typing import Any, NamedTuple

from ops.spark.reader import read_range
from ops.spark.segments import BackupError, Range, Segment, ranges

SCHEMA = (
    "phys_offset long, size int, kind string, topic string, queue_id int, queue_offset long, "
    "store_timestamp long, keys string, uniq_key string, crc_ok boolean, digest long, "
    "store_host string"
)
FIELDS = [part.split()[0] for part in SCHEMA.split(", ")]
ROW_GROUP = 1 << 16  # rows per Parquet row group: ~8 MiB of 1 KiB messages' columns
MAX_HOSTS = 16  # distinct store hosts a range reports: past two the backup is refused anyway


class RangeSummary(NamedTuple):
    """What one range's records say, sent back to the driver (a few fields, whatever its
    size). A range ends at its first corrupt record (``reader.read_range``), so it has at most
    one, and all its messages lie before it."""

    start: int
    messages: int
    end: int | None  # end of its last message
    hosts: tuple[str, ...]  # distinct store hosts, sorted, at most MAX_HOSTS
    more_hosts: bool  # more than MAX_HOSTS
    corrupt: tuple[int, str] | None  # (offset, reason)


class SideSummary(NamedTuple):
    """A whole log's figures, counting only what lies before its first corrupt record."""

    messages: int
    end: int | None
    hosts: tuple[str, ...]  # distinct, sorted (MAX_HOSTS per range at most)
    more_hosts: bool
    corrupt: list[tuple[int, str]]  # the first ``listed``, by offset
    first_corrupt: int | None


def summarise(ranges_: list[RangeSummary], listed: int) -> SideSummary:
    """Ranges are disjoint by the offsets their records start at: those starting after the
    first corrupt record hold nothing trusted; the one holding it stops there."""
    corrupt = sorted(r.corrupt for r in ranges_ if r.corrupt is not None)
    first = corrupt[0][0] if corrupt else None
    trusted = [r for r in ranges_ if first is None or r.start <= first]
    ends = [r.end for r in trusted if r.end is not None]
    hosts = sorted({h for r in trusted for h in r.hosts})
    return SideSummary(
        messages=sum(r.messages for r in trusted),
        end=max(ends) if ends else None,
        hosts=tuple(hosts),
        more_hosts=any(r.more_hosts for r in trusted),
        corrupt=corrupt[:listed],
        first_corrupt=first,
    )


class _Tally:
    """A range's figures, gathered as its rows stream past."""

    def __init__(self, start: int) -> None:
        self.start, self.messages, self.end = start, 0, None
        self.hosts: set[str] = set()
        self.corrupt: tuple[int, str] | None = None

    def add(self, rows: list[tuple]) -> None:
        for row in rows:
            if row[2] == "MESSAGE":
                self.messages += 1
                self.end = row[0] + row[1]  # records come in offset order
                self.hosts.add(row[11])
            elif row[2] == "CORRUPT":
                self.corrupt = (row[0], row[3])

    def summary(self) -> RangeSummary:
        hosts = sorted(self.hosts)
        return RangeSummary(
            self.start,
            self.messages,
            self.end,
            tuple(hosts[:MAX_HOSTS]),
            len(hosts) > MAX_HOSTS,
            self.corrupt,
        )


def arrow_schema() -> Any:
    import pyarrow as pa

    kinds = {"long": pa.int64(), "int": pa.int32(), "string": pa.string(), "boolean": pa.bool_()}
    return pa.schema(
        [
            (name, kinds[part.split()[1]])
            for name, part in zip(FIELDS, SCHEMA.split(", "), strict=True)
        ]
    )


def record_batch(rows: list[tuple], schema: Any) -> Any:
    import pyarrow as pa

    columns = zip(*rows, strict=True)
    return pa.RecordBatch.from_arrays(
        [pa.array(list(c), type=f.type) for c, f in zip(columns, schema, strict=True)],
        schema=schema,
    )


def part_name(start: int) -> str:
    """Named by the range's start: both logs are cut at the same offsets, so a name finds the
    other log's part of the same offsets."""
    return f"part-{start:020d}.parquet"


def write_part(folder: str, rng: Range) -> RangeSummary:
    """A range as ``folder/part_name(start)`` (written under a hidden name, then
    renamed: a retried or speculative task leaves one whole file, never half of one), and its
    figures."""
    import pyarrow.parquet as pq

    schema = arrow_schema()
    tally = _Tally(rng.start)
    final = Path(folder) / part_name(rng.start)
    scratch = Path(folder) / f".{final.name}.{uuid.uuid4().hex}.tmp"
    try:
        with pq.ParquetWriter(scratch, schema) as writer:
            rows: list[tuple] = []
            for row in read_range(rng):
                rows.append(row)
                if len(rows) >= ROW_GROUP:
                    writer.write_batch(record_batch(rows, schema))
                    tally.add(rows)
                    rows = []
            if rows:
                writer.write_batch(record_batch(rows, schema))
                tally.add(rows)
        os.replace(scratch, final)
    finally:
        scratch.unlink(missing_ok=True)
    return tally.summary()


def parse_to_parquet(
    spark: Any, segments: list[Segment], split_bytes: int, folder: Path
) -> list[RangeSummary]:
    """The segments' records as Parquet parts in ``folder`` (replaced), parsed by one task per
    range; each range's figures, in offset order."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    work = ranges(segments, split_bytes)
    context = spark.sparkContext
    summaries = (
        context.parallelize(work, len(work))
        .map(functools.partial(write_part, str(folder)))
        .collect()
    )
    missing = sorted({part_name(r.start) for r in work} - {p.name for p in folder.iterdir()})
    if missing:
        raise BackupError(
            f"{folder}: the tasks wrote {missing[0]} (and {len(missing) - 1} more) where the "
            "driver does not see them; on a cluster --out must be one folder shared by the "
            "driver and every executor"
        )
    return [RangeSummary(*s) for s in summaries]
