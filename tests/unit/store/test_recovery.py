"""Recovery after clean stops, crashes and torn writes (docs/spec/store-format.md §7)."""

from __future__ import annotations

import os

import pytest

from remoting import message as codec
from tests.unit.store.conftest import StoreFactory, crash, message
from tests.unit.store.test_queues import check_queues_match_log


def write(stores: StoreFactory, count: int, **overrides: object) -> list[tuple[int, int]]:
    """Put ``count`` messages over two queues, crash, and return (offset, size) of each."""
    store = stores.open(**overrides)
    records = []
    for i in range(count):
        result = store.put_message(
            message(queue_id=i % 2, body=f"payload-{i}".encode() * 5, KEYS=f"k{i}", TAGS="A")
        )
        records.append((result.append.wrote_offset, result.append.wrote_bytes))
    crash(store)
    stores.opened.remove(store)
    return records


def commit_log_file(stores: StoreFactory, offset: int):
    size = stores.config().mapped_file_size_commit_log
    return stores.config().commit_log_dir / f"{offset - offset % size:020d}", offset % size


def test_clean_restart_keeps_everything(stores: StoreFactory) -> None:
    store = stores.open()
    for i in range(200):
        store.put_message(message(queue_id=i % 3, KEYS=f"k{i}"))
    before = (store.max_phys_offset, [store.get_max_offset_in_queue("T", q) for q in range(3)])
    store.shutdown()
    assert not store.config.abort_path.exists()
    reopened = stores.open()
    assert reopened.recovery_report.mode == "normal"
    assert (
        reopened.max_phys_offset,
        [reopened.get_max_offset_in_queue("T", q) for q in range(3)],
    ) == before
    assert reopened.put_message(message(queue_id=0)).append.queue_offset == before[1][0]


def test_crash_recovery_is_abnormal_and_keeps_every_record(stores: StoreFactory) -> None:
    records = write(stores, 300)
    store = stores.open()
    assert store.recovery_report.mode == "abnormal"
    assert store.max_phys_offset == records[-1][0] + records[-1][1]
    check_queues_match_log(store)
    assert [
        codec.decode_message(b).keys for b in store.query_message("T", "k299", 4, 0, 2**62).buffers
    ] == ["k299"]


def _properties_start(record: bytes) -> int:
    body_length = int.from_bytes(record[84:88], "big")
    return 88 + body_length + 1 + record[88 + body_length] + 2


@pytest.mark.parametrize("writer", ["ours", "magic-first"])
def test_recovery_drops_only_the_torn_record_at_every_cut_point(
    stores: StoreFactory, writer: str
) -> None:
    """``ours``: a process killed while writing the last record (our writer puts the magic code
    last). ``magic-first``: a writer that puts it first (Java, or pages written back out of
    order): any cut before the properties is still caught by the size check; a cut inside the
    properties is not, in RocketMQ's format either (no CRC over them)."""
    records = write(stores, 40)
    last_start, last_size = records[-1]
    path, position = commit_log_file(stores, last_start)
    pristine = path.read_bytes()
    end = (
        _properties_start(pristine[position : position + last_size])
        if writer == "magic-first"
        else last_size
    )
    for cut in range(position + 1, position + end):  # every torn-write point
        data = bytearray(pristine)
        data[cut : position + last_size] = bytes(position + last_size - cut)
        if writer == "ours":
            data[position + 4 : position + 8] = bytes(4)
        path.write_bytes(data)
        (stores.config().abort_path).touch()
        store = stores.open()
        assert store.max_phys_offset == last_start, f"cut at {cut}"
        assert (
            store.get_max_offset_in_queue("T", 39 % 2) == 39 // 2
        )  # the torn record's queue lost it
        check_queues_match_log(store)
        next_put = store.put_message(message(queue_id=1))
        assert (
            next_put.append.wrote_offset == last_start and next_put.append.queue_offset == 39 // 2
        )
        crash(store)
        stores.opened.remove(store)
        path.write_bytes(pristine)


@pytest.mark.parametrize("tail", ["garbage", "half-record", "flipped-body-byte"])
def test_a_damaged_tail_is_cut_and_appending_continues(stores: StoreFactory, tail: str) -> None:
    records = write(stores, 50)
    last_start, last_size = records[-1]
    path, position = commit_log_file(stores, last_start)
    data = bytearray(path.read_bytes())
    if tail == "garbage":
        data[position + last_size : position + last_size + 300] = os.urandom(300)
        expected_end = last_start + last_size
    elif tail == "half-record":
        data[position + last_size // 2 : position + last_size] = bytes(last_size - last_size // 2)
        expected_end = last_start
    else:
        data[position + 100] ^= 0xFF  # inside the body: the CRC no longer matches
        expected_end = last_start
    path.write_bytes(data)
    store = stores.open()
    assert store.max_phys_offset == expected_end
    check_queues_match_log(store)
    result = store.put_message(message(body=b"after"))
    assert result.ok and result.append.wrote_offset == expected_end
    # The stale bytes after the cut were zeroed: a second crash cannot resurrect them.
    crash(store)
    stores.opened.remove(store)
    again = stores.open()
    assert again.max_phys_offset == result.append.end_offset
    check_queues_match_log(again)


def test_consume_queues_ahead_of_the_log_are_truncated(stores: StoreFactory) -> None:
    records = write(stores, 30)
    # Lose the last segment's records: the ConsumeQueues still point at them.
    cut_start = records[20][0]
    path, position = commit_log_file(stores, cut_start)
    data = bytearray(path.read_bytes())
    data[position:] = bytes(len(data) - position)
    path.write_bytes(data)
    for later in stores.config().commit_log_dir.iterdir():
        if later.name > path.name:
            later.unlink()
    store = stores.open()
    assert store.max_phys_offset == cut_start
    assert store.get_max_offset_in_queue("T", 0) + store.get_max_offset_in_queue("T", 1) == 20
    check_queues_match_log(store)
    assert store.query_message("T", "k25", 4, 0, 2**62).buffers == []
    assert [
        codec.decode_message(b).keys for b in store.query_message("T", "k19", 4, 0, 2**62).buffers
    ] == ["k19"]


def test_a_second_store_on_the_same_directory_is_refused(stores: StoreFactory) -> None:
    stores.open()
    from broker.store.mapped_file import StoreError

    with pytest.raises(StoreError, match="in use by another broker"):
        stores.open()


def test_a_segment_of_the_wrong_size_stops_the_start(stores: StoreFactory) -> None:
    write(stores, 5)
    path, _ = commit_log_file(stores, 0)
    with path.open("ab") as f:
        f.write(b"x")
    from broker.store.mapped_file import StoreError

    with pytest.raises(StoreError, match="expected 8192"):
        stores.open()
