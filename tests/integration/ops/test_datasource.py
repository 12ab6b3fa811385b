"""``spark.read.format("commitlog")`` (ops/spark/datasource.py), which operators use for ad-hoc
reads of a backup: Spark reads the rows the job's own reader gives, whatever the split, across
segment ends."""

from __future__ import annotations

import pytest

from ops.spark.reader import read_range
from ops.spark.segments import list_segments, ranges
from tests.kits.storekit import build_master

pytestmark = pytest.mark.spark


def test_spark_reads_the_rows_the_reader_gives(spark, tmp_path):
    build_master(tmp_path, 400)
    segments = list_segments(tmp_path / "commitlog")
    assert len(segments) > 1  # the read crosses segment ends
    expected = [tuple(row) for rng in ranges(segments, 1 << 40) for row in read_range(rng)]

    frame = (
        spark.read.format("commitlog")
        .option("splitBytes", str(100_000))  # ranges that start mid-record: the resync path
        .load(str(tmp_path / "commitlog"))
    )
    got = sorted((tuple(row) for row in frame.collect()), key=lambda row: row[0])

    assert [row[2] for row in got].count("MESSAGE") == 400  # and each segment's BLANK end
    assert got == expected
