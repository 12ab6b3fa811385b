"""The streaming CommitLog reader: any split of the backup yields exactly the stored records."""

from __future__ import annotations

import os

import pytest

from ops.spark.reader import read_range
from ops.spark.segments import BackupError, list_segments, ranges
from remoting.record import RecordKind, scan_record
from tests.kits.storekit import SEGMENT, build_master, record_offsets


@pytest.fixture(scope="module")
def master(tmp_path_factory):
    root = tmp_path_factory.mktemp("master")
    build_master(root, 1500)
    return root


def rows(folder, split=None, buffer_bytes=8 << 20):
    return [
        row
        for rng in ranges(list_segments(folder), split)
        for row in read_range(rng, buffer_bytes=buffer_bytes)
    ]


def test_whole_segments_yield_every_record_once(master) -> None:
    messages = [r for r in rows(master / "commitlog") if r.kind == "MESSAGE"]
    assert [r.phys_offset for r in messages] == record_offsets(master)
    assert len(messages) == 1500 and all(r.crc_ok for r in messages)
    assert {r.keys for r in messages} == {f"k{i}" for i in range(1500)}
    assert messages[0].store_host == "10.0.0.1:10911"


@pytest.mark.parametrize("split,buffer_bytes", [(4096, 1 << 20), (7777, 1000), (SEGMENT, 333)])
def test_any_split_and_buffer_size_gives_the_same_rows(master, split, buffer_bytes) -> None:
    assert rows(master / "commitlog", split, buffer_bytes) == rows(master / "commitlog")


def test_corrupt_record_ends_its_range_with_a_finding(master, tmp_path) -> None:
    import shutil

    copy = tmp_path / "commitlog"
    shutil.copytree(master / "commitlog", copy)
    victim = record_offsets(master)[100]
    first = sorted(copy.iterdir())[victim // SEGMENT]
    with open(first, "r+b") as handle:
        handle.seek(victim % SEGMENT + 100)
        handle.write(b"\xff" * 8)  # inside the body: the CRC no longer matches
    found = rows(copy)
    corrupt = [r for r in found if r.kind == "CORRUPT"]
    assert corrupt[0].phys_offset == victim and not corrupt[0].crc_ok


def test_a_missing_segment_is_named(master, tmp_path) -> None:
    import shutil

    copy = tmp_path / "commitlog"
    shutil.copytree(master / "commitlog", copy)
    files = sorted(copy.iterdir())
    os.remove(files[1])
    with pytest.raises(BackupError, match="missing segment"):
        list_segments(copy)


def test_a_stray_file_is_refused(tmp_path) -> None:
    (tmp_path / "notes.txt").write_text("hi")
    with pytest.raises(BackupError, match="not a CommitLog segment"):
        list_segments(tmp_path)


def test_records_larger_than_the_read_ahead_are_read_whole(tmp_path) -> None:
    from broker.store.message_store import DefaultMessageStore
    from tests.kits.storekit import config, message

    store = DefaultMessageStore(
        config(tmp_path, mapped_file_size_commit_log=4 << 20), store_host=("10.0.0.1", 10911)
    )
    store.load()
    for i in range(12):
        body = bytes([i]) * (300_000 if i % 3 == 0 else 700)
        assert store.put_message(message("Big", 0, body, f"b{i}")).ok
    store.shutdown()
    found = rows(tmp_path / "commitlog", buffer_bytes=100_000)
    assert [r.keys for r in found if r.kind == "MESSAGE"] == [f"b{i}" for i in range(12)]
    assert all(r.crc_ok for r in found)


def test_fast_path_rows_equal_what_scan_record_reads(tmp_path) -> None:
    """IPv4 records take the reader's fused path, IPv6 ones scan_record: both give the rows a
    plain walk with scan_record gives."""
    from broker.store.message_store import DefaultMessageStore
    from ops.spark import reader
    from tests.kits.storekit import config, message

    for host in ("10.0.0.1", "::1"):
        root = tmp_path / host.replace(":", "_")
        store = DefaultMessageStore(config(root), store_host=(host, 10911))
        store.load()
        for i in range(300):
            assert store.put_message(message(f"T{i % 3}", i % 4, b"b" * (i * 7 % 500), f"k{i}")).ok
        store.shutdown()
        expected = []
        for segment in list_segments(root / "commitlog"):
            view = memoryview(open(segment.path, "rb").read())  # noqa: SIM115
            position = 0
            while (scan := scan_record(view, position, check_crc=True)).kind in (
                RecordKind.MESSAGE,
                RecordKind.BLANK,
            ):
                if scan.kind is RecordKind.MESSAGE:
                    expected.append(reader._row(view, position, segment.start + position, scan))
                position += scan.size
        got = [r for r in rows(root / "commitlog") if r.kind == "MESSAGE"]
        assert len(got) == 300 and got == expected


def test_backup_locations_are_paths_or_file_uris(tmp_path) -> None:
    from ops.spark.segments import local_path

    assert local_path(str(tmp_path)) == tmp_path
    assert local_path(f"file://{tmp_path}/a%20b") == tmp_path / "a b"
    assert local_path(f"file://localhost{tmp_path}") == tmp_path
    for bad, reason in [
        ("hdfs://nn:8020/backups", "hdfs:// is not read by this job's tasks"),
        ("s3a://bucket/x", "s3a:// is not read"),
        ("file://otherhost/x", "names no host"),
    ]:
        with pytest.raises(BackupError, match=reason):
            local_path(bad)
