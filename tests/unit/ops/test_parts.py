"""The parse's part files and range figures: whatever the split, the parts hold exactly the
stored records and the folded figures equal a brute-force walk of the whole log (trusted
messages stop at the first corrupt record)."""

from __future__ import annotations

import shutil

import pytest

from ops.spark.reader import read_range
from ops.spark.segments import list_segments, ranges
from tests.kits.storekit import SEGMENT, build_master, record_offsets

pq = pytest.importorskip(
    "pyarrow.parquet", reason="pyarrow is not installed (pip install '.[spark]')"
)

from ops.spark.parts import FIELDS, part_name, summarise, write_part  # noqa: E402


@pytest.fixture(scope="module")
def master(tmp_path_factory):
    root = tmp_path_factory.mktemp("master")
    build_master(root, 900)
    return root


def corrupt(commitlog, offset: int) -> None:
    segment = sorted(commitlog.iterdir())[offset // SEGMENT]
    with open(segment, "r+b") as handle:
        handle.seek(offset % SEGMENT + 100)
        handle.write(b"\xff" * 8)  # inside the body: the CRC no longer matches


def brute_force(commitlog):
    rows = [row for rng in ranges(list_segments(commitlog)) for row in read_range(rng)]
    corrupt_rows = sorted((r.phys_offset, r.topic) for r in rows if r.kind == "CORRUPT")
    first = corrupt_rows[0][0] if corrupt_rows else None
    trusted = [r for r in rows if r.kind == "MESSAGE" and (first is None or r.phys_offset < first)]
    return {
        "messages": len(trusted),
        "end": max(r.phys_offset + r.size for r in trusted),
        "hosts": tuple(sorted({r.store_host for r in trusted})),
        "first_corrupt": first,
        "corrupt": corrupt_rows,
    }


@pytest.mark.parametrize("damaged", [(), (300,), (300, 700)], ids=["clean", "one", "two"])
@pytest.mark.parametrize("split", [7777, SEGMENT])
def test_parts_and_figures_match_a_walk_of_the_whole_log(master, tmp_path, split, damaged):
    commitlog = tmp_path / "commitlog"
    shutil.copytree(master / "commitlog", commitlog)
    offsets = record_offsets(master)
    for k in damaged:
        corrupt(commitlog, offsets[k])
    expected = brute_force(commitlog)
    parts = tmp_path / "parts"
    parts.mkdir()
    work = ranges(list_segments(commitlog), split)
    side = summarise([write_part(str(parts), item) for item in work], listed=100)

    assert side.messages == expected["messages"]
    assert side.end == expected["end"]
    assert side.hosts == expected["hosts"] and not side.more_hosts
    assert side.first_corrupt == expected["first_corrupt"]
    assert side.corrupt == expected["corrupt"]
    assert (
        summarise([write_part(str(parts), item) for item in work], listed=1).corrupt
        == (expected["corrupt"][:1])
    )
    written = pq.read_table(parts).sort_by("phys_offset").to_pylist()
    same_split = [tuple(row) for rng in work for row in read_range(rng)]
    assert [tuple(r[f] for f in FIELDS) for r in written] == same_split
    assert sorted(p.name for p in parts.iterdir()) == [part_name(rng.start) for rng in work]


def test_a_part_the_driver_listed_but_a_task_cannot_open_fails_the_task(master, tmp_path):
    """On a cluster whose --out is not shared, an executor may not see another's part: that
    must fail, never read as a range without records (a wrong report)."""
    from ops.spark.compare import Trust, first_mismatch, master_queues

    rng = ranges(list_segments(master / "commitlog"))[0]
    (tmp_path / "slave").mkdir()
    (tmp_path / "master").mkdir()
    write_part(str(tmp_path / "slave"), rng)
    name = part_name(rng.start)
    master_trust, slave_trust = (
        Trust(str(tmp_path / "master"), None),
        Trust(str(tmp_path / "slave"), None),
    )
    with pytest.raises(FileNotFoundError):
        first_mismatch(master_trust, slave_trust, 0, 1 << 40, (name, True))
    with pytest.raises(FileNotFoundError):
        master_queues(master_trust, 0, name)
    assert first_mismatch(master_trust, slave_trust, 0, 1 << 40, (name, False)) == rng.start
