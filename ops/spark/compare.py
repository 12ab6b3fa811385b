"""The questions asked of both parsed logs, answered range by range in the Python tasks from the
Parquet parts (pyarrow reads only the columns asked for): where the slave first differs from
the master, and the per-queue figures. No Spark here; ``reconcile`` sends one task per part.

Both logs are cut into the same ranges (one segment size, one split), and a part holds exactly
the records that start in its range, so a slave record and the master's record at the same
offset are always in the parts of one name: no shuffle, no join across ranges.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

COMPARED = ["phys_offset", "size", "kind", "digest"]
QUEUE_COLUMNS = [
    "phys_offset",
    "size",
    "kind",
    "topic",
    "queue_id",
    "queue_offset",
    "store_timestamp",
]


class Trust(NamedTuple):
    """What of one side counts: its messages below ``first_corrupt`` (None: all)."""

    folder: str
    first_corrupt: int | None


def _trusted(trust: Trust, name: str, columns: list[str]) -> Any:
    """The part's trusted messages. The part must be there (the driver saw it written): a
    missing one is an error, never read as a range without records."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    table = pq.read_table(Path(trust.folder) / name, columns=columns)
    mask = pc.equal(table["kind"], "MESSAGE")
    if trust.first_corrupt is not None:
        mask = pc.and_(mask, pc.less(table["phys_offset"], trust.first_corrupt))
    return table.filter(mask)


def first_mismatch(
    master: Trust, slave: Trust, lo: int, hi: int, part: tuple[str, bool]
) -> int | None:
    """The lowest offset in [lo, hi) of a trusted slave message in part ``name`` that the
    master's trusted records lack at that offset with the same size and digest; ``part`` is
    (name, whether the master has a part of that name)."""
    import pyarrow.compute as pc

    name, master_has = part
    theirs = _trusted(slave, name, COMPARED)
    offsets = theirs["phys_offset"]
    theirs = theirs.filter(pc.and_(pc.greater_equal(offsets, lo), pc.less(offsets, hi)))
    if theirs.num_rows == 0:
        return None
    if not master_has:  # [lo, hi) lies inside the master's segments: not reached
        return pc.min(theirs["phys_offset"]).as_py()
    ours = _trusted(master, name, COMPARED)
    joined = theirs.select(["phys_offset", "size", "digest"]).join(
        ours.select(["phys_offset", "size", "digest"]),
        keys="phys_offset",
        join_type="left outer",
        right_suffix="_m",
    )
    differ = pc.or_kleene(
        pc.is_null(joined["digest_m"]),
        pc.or_(
            pc.not_equal(joined["digest_m"], joined["digest"]),
            pc.not_equal(joined["size_m"], joined["size"]),
        ),
    )
    bad = joined.filter(pc.fill_null(differ, True))["phys_offset"]
    return pc.min(bad).as_py() if len(bad) else None


def master_queues(master: Trust, missing_from: int, name: str) -> list[tuple]:
    """((topic, queue_id), (max queue offset, newest store timestamp, messages and bytes at or
    past ``missing_from``)) of the trusted messages in part ``name``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    table = _trusted(master, name, QUEUE_COLUMNS)
    if table.num_rows == 0:
        return []
    late = pc.greater_equal(table["phys_offset"], missing_from)
    table = table.append_column("missing", pc.cast(late, pa.int64())).append_column(
        "bytes", pc.if_else(late, pc.cast(table["size"], pa.int64()), 0)
    )
    grouped = table.group_by(["topic", "queue_id"]).aggregate(
        [("queue_offset", "max"), ("store_timestamp", "max"), ("missing", "sum"), ("bytes", "sum")]
    )
    return [
        (
            (r["topic"], r["queue_id"]),
            (r["queue_offset_max"], r["store_timestamp_max"], r["missing_sum"], r["bytes_sum"]),
        )
        for r in grouped.to_pylist()
    ]


def slave_queues(slave: Trust, agree: int, name: str) -> list[tuple]:
    """((topic, queue_id), (max queue offset, newest store timestamp)) of the trusted slave
    messages below ``agree`` in part ``name``."""
    import pyarrow.compute as pc

    table = _trusted(slave, name, QUEUE_COLUMNS)
    table = table.filter(pc.less(table["phys_offset"], agree))
    if table.num_rows == 0:
        return []
    grouped = table.group_by(["topic", "queue_id"]).aggregate(
        [("queue_offset", "max"), ("store_timestamp", "max")]
    )
    return [
        ((r["topic"], r["queue_id"]), (r["queue_offset_max"], r["store_timestamp_max"]))
        for r in grouped.to_pylist()
    ]


def merge_master(a: tuple, b: tuple) -> tuple:
    return (max(a[0], b[0]), max(a[1], b[1]), a[2] + b[2], a[3] + b[3])


def merge_slave(a: tuple, b: tuple) -> tuple:
    return (max(a[0], b[0]), max(a[1], b[1]))
