"""A disk that fills up or fails under the store: no service dies, reads go on, sends are
refused with the reason, a stored message is never answered as failed, nothing dispatched is
skipped, and writing resumes by itself once the disk is back (broker/store/health.py)."""

from __future__ import annotations

import os

import pytest
import trio

from broker.store import allocate, flush
from broker.store.config import FlushDiskType
from broker.store.index_file import GROW_BYTES, GROW_ENTRIES
from broker.store.index_service import IndexService
from broker.store.mapped_file import DiskError
from broker.store.types import DispatchRequest, MessageExtBrokerInner, PutMessageStatus
from remoting import message as codec
from tests.unit.store.conftest import StoreFactory, crash, message
from tests.unit.store.diskfaults import FaultyDisk
from tests.unit.store.test_queues import check_queues_match_log

FOREVER = 2**62


def bodies(store, topic: str, queue_id: int) -> list[bytes]:
    """Every message of a queue, as pulls read them."""
    out: list[bytes] = []
    offset = 0
    while True:
        result = store.get_message("G", topic, queue_id, offset, 32, None)
        if not result.buffers:
            return out
        out += [bytes(codec.decode_message(b).body) for b in result.buffers]
        offset = result.next_begin_offset


def trouble(store) -> str:
    return store.runtime_info()["storeDiskTrouble"]


async def test_a_queue_file_the_disk_refuses_holds_dispatch_back_not_the_send(
    stores: StoreFactory, disk: FaultyDisk
) -> None:
    store = stores.open()
    for i in range(3):
        assert store.put_message(message(queue_id=0, body=f"a{i}".encode())).ok
    disk.fill("/consumequeue/")
    # Queue 1 has no file yet: the message is appended, so it is answered as stored.
    stored = store.put_message(message(queue_id=1, body=b"b0"))
    assert stored.ok
    refused = store.put_message(message(queue_id=0, body=b"a3"))
    assert refused.status is PutMessageStatus.DISK_FULL
    assert "consumequeue/T/1" in refused.remark and "[Errno 28]" in refused.remark
    assert store.runtime_info()["storeWritable"] == "false"
    assert trouble(store).startswith("dispatch: disk full")
    assert bodies(store, "T", 0) == [b"a0", b"a1", b"a2"]  # reads are served
    assert await store.reput.catch_up() is True  # still full: reput waits where it was
    assert store.reput.reput_from_offset == stored.append.wrote_offset
    disk.free()
    assert await store.reput.catch_up() is False
    assert bodies(store, "T", 1) == [b"b0"]
    assert store.health.writable and trouble(store) == ""
    assert store.put_message(message(queue_id=0, body=b"a3")).ok
    assert bodies(store, "T", 0) == [b"a0", b"a1", b"a2", b"a3"]
    check_queues_match_log(store)


async def test_a_batch_whose_queue_cannot_grow_is_dispatched_whole_later(
    stores: StoreFactory, disk: FaultyDisk
) -> None:
    store = stores.open()  # 64 units a ConsumeQueue file
    for _ in range(60):
        assert store.put_message(message(topic="B")).ok
    disk.fill("/consumequeue/")
    body = codec.encode_batch_body([(0, f"e{i}".encode(), "") for i in range(10)])
    batch = store.put_messages(MessageExtBrokerInner(topic="B", queue_id=0, body=body))
    assert batch.ok and batch.append.queue_offset == 60
    assert store.get_max_offset_in_queue("B", 0) == 64  # the units that fitted
    disk.free()
    assert await store.reput.catch_up() is False
    assert store.get_max_offset_in_queue("B", 0) == 70
    check_queues_match_log(store)


async def test_a_segment_the_disk_refuses_refuses_sends_until_it_can_be_made(
    stores: StoreFactory, disk: FaultyDisk, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(allocate, "RETRY_S", 0.01)
    store = stores.open()  # 8 KiB segments
    assert store.put_message(message(body=b"first")).ok
    disk.fill("/commitlog/")
    async with trio.open_nursery() as nursery:
        await nursery.start(store.run)
        results = [store.put_message(message(body=b"x" * 500)) for _ in range(30)]
        ok = [r for r in results if r.ok]
        assert 0 < len(ok) < 30 and results[: len(ok)] == ok  # refused from the roll on
        refused = results[len(ok)]
        assert refused.status is PutMessageStatus.DISK_FULL
        assert "commitlog/00000000000000008192" in refused.remark
        assert trouble(store).startswith("commitlog: disk full")
        assert len(bodies(store, "T", 0)) == 1 + len(ok)
        disk.free()
        with trio.fail_after(10):
            while not store.health.writable:
                await trio.sleep(0.01)
        after = store.put_message(message(body=b"room again"))
        assert after.ok and after.append.wrote_offset == 8192
        with trio.fail_after(10):
            while store.reput.behind_bytes:
                await trio.sleep(0.01)
        assert bodies(store, "T", 0)[-1] == b"room again"
        check_queues_match_log(store)
        nursery.cancel_scope.cancel()


def test_an_index_file_the_disk_refuses_leaves_keys_unindexed_not_messages(
    stores: StoreFactory, disk: FaultyDisk
) -> None:
    now = [100.0]
    store = stores.open()
    store.index_service.clock = lambda: now[0]
    disk.fill("/index/")
    assert store.put_message(message(KEYS="k1")).ok
    assert store.get_max_offset_in_queue("T", 0) == 1  # its unit is there
    assert store.query_message("T", "k1", 32, 0, FOREVER).buffers == []
    info = store.runtime_info()
    assert info["storeWritable"] == "true" and info["indexKeysNotIndexed"] == "1"
    assert trouble(store).startswith("index: disk full")
    refused = disk.allocations_refused
    assert store.put_message(message(KEYS="k2")).ok
    assert disk.allocations_refused == refused  # not tried again before RETRY_S
    disk.free()
    now[0] += 2
    assert store.put_message(message(KEYS="k3")).ok
    assert len(store.query_message("T", "k3", 32, 0, FOREVER).buffers) == 1
    assert store.query_message("T", "k2", 32, 0, FOREVER).buffers == []
    assert trouble(store) == "" and store.runtime_info()["indexKeysNotIndexed"] == "2"


def _requests(first: int, count: int) -> list[DispatchRequest]:
    return [
        DispatchRequest("T", 0, 100 * i, 100, 0, 1_700_000_000_000, i, f"k{i}", "", 0, {})
        for i in range(first, first + count)
    ]


def _allocated(path) -> int:
    return os.stat(path).st_blocks * 512


def test_index_entries_are_allocated_as_they_fill_and_wait_for_room(
    tmp_path, disk: FaultyDisk
) -> None:
    now = [0.0]
    service = IndexService(tmp_path / "index", 1024, 3 * GROW_ENTRIES, clock=lambda: now[0])
    service.build_index_batch(_requests(0, 10))
    index = service.files[0]
    entries_at = 40 + 1024 * 4
    assert _allocated(index.path) < entries_at + GROW_BYTES + 4096  # not its full 3 MiB
    service.build_index_batch(_requests(10, GROW_ENTRIES))  # past the first allocation
    assert index.max_entries > GROW_ENTRIES
    disk.fill("/index/")
    room = index.max_entries - index.header.index_count
    service.build_index_batch(_requests(10 + GROW_ENTRIES, room + 5))
    assert index.header.index_count == index.max_entries  # what was allocated, no more
    assert service.health.keys_not_indexed == 5
    disk.free()
    now[0] += 2
    service.build_index_batch(_requests(20 + GROW_ENTRIES + room, 3))
    assert service.files == [index]  # the same file goes on
    for key in ("k0", f"k{GROW_ENTRIES}", f"k{22 + GROW_ENTRIES + room}"):
        assert len(service.query("T", key, 4, 0, FOREVER)[0]) == 1
    service.close()


def test_an_index_file_of_rocketmq_size_takes_only_what_it_uses(tmp_path) -> None:
    service = IndexService(tmp_path / "index", 5_000_000, 20_000_000)  # 420 MB files
    service.build_index_batch(_requests(0, 100))
    path = service.files[0].path
    assert path.stat().st_size == 420_000_040
    assert _allocated(path) < 20_000_040 + 2 * GROW_BYTES  # header, slots and one step
    service.close()


async def test_a_failed_sync_flush_is_answered_at_once_and_never_acknowledged(
    stores: StoreFactory, disk: FaultyDisk, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(flush, "RETRY_S", 0.01)
    store = stores.open(flush_disk_type=FlushDiskType.SYNC_FLUSH)
    async with trio.open_nursery() as nursery:
        await nursery.start(store.run)
        disk.break_flush("/commitlog/")
        stored = store.put_message(message(body=b"not durable yet"))
        assert stored.ok
        end = stored.append.end_offset
        with trio.fail_after(30):  # answered by the failed flush, not at its 600 s timeout
            assert await store.wait_flushed(end, 600) is PutMessageStatus.FLUSH_DISK_TIMEOUT
        assert store.commit_log.queue.flushed_where < end
        refused = store.put_message(message())
        assert refused.status is PutMessageStatus.SERVICE_NOT_AVAILABLE
        assert "[Errno 5]" in refused.remark and "/commitlog/" in refused.remark
        assert trouble(store).startswith("flush: disk error")
        assert bodies(store, "T", 0) == [b"not durable yet"]  # stored, readable
        disk.fix()
        with trio.fail_after(30):  # the pages are flushed again, for real this time
            while await store.wait_flushed(end, 600) is not PutMessageStatus.PUT_OK:
                pass
        assert store.health.writable
        again = store.put_message(message(body=b"durable"))
        with trio.fail_after(30):
            assert await store.wait_flushed(again.append.end_offset, 600) is (
                PutMessageStatus.PUT_OK
            )
        nursery.cancel_scope.cancel()


async def test_a_failed_async_flush_counts_nothing_flushed_and_refuses_sends_until_one_works(
    stores: StoreFactory, disk: FaultyDisk
) -> None:
    store = stores.open()
    before = store.checkpoint.physic_msg_timestamp
    stored = store.put_message(message(body=b"not durable yet"))
    disk.break_flush("/commitlog/")
    with pytest.raises(DiskError, match=r"cannot flush .*/commitlog/.*\[Errno 5\]"):
        await store.flusher.flush_once(0)
    assert store.commit_log.queue.flushed_where < stored.append.end_offset
    assert store.checkpoint.physic_msg_timestamp == before
    assert store.put_message(message()).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    disk.fix()
    assert await store.flusher.flush_once(4)  # retried whatever the least pages
    assert store.commit_log.queue.flushed_where >= stored.append.end_offset
    assert store.health.writable and store.put_message(message()).ok


async def test_a_failed_queue_flush_keeps_the_checkpoint_where_it_was(
    stores: StoreFactory, disk: FaultyDisk
) -> None:
    store = stores.open()
    assert store.put_message(message()).ok
    service = store.flush_queues
    disk.break_flush("/consumequeue/")
    await service.flush_once(0, thorough=True)
    assert store.checkpoint.logics_msg_timestamp == 0
    assert store.health.writable and trouble(store).startswith("checkpoint: disk error")
    disk.fix()
    await service.flush_once(0, thorough=True)
    assert store.checkpoint.logics_msg_timestamp == store.dispatcher.last_dispatched_timestamp > 0
    assert trouble(store) == ""


async def test_a_crashed_store_restarts_on_a_full_disk_and_catches_up_once_there_is_room(
    stores: StoreFactory, disk: FaultyDisk
) -> None:
    store = stores.open()
    for i in range(5):
        assert store.put_message(message(queue_id=0, body=f"a{i}".encode())).ok
        assert store.put_message(message(queue_id=1, body=f"b{i}".encode())).ok
    crash(store)
    stores.opened.remove(store)
    # Queue 1's file never reached the disk: recovery has to make it again.
    for part in (store.config.consume_queue_dir / "T" / "1").iterdir():
        part.unlink()
    disk.fill()
    store = stores.open()
    assert store.recovery_report.mode == "abnormal"
    assert trouble(store).startswith("dispatch: disk full")
    assert store.put_message(message()).status is PutMessageStatus.DISK_FULL
    assert bodies(store, "T", 0) == [f"a{i}".encode() for i in range(5)]
    disk.free()
    assert await store.reput.catch_up() is False
    assert bodies(store, "T", 1) == [f"b{i}".encode() for i in range(5)]
    after = store.put_message(message(queue_id=1, body=b"b5"))
    assert after.ok and after.append.queue_offset == 5  # not a second offset 0
    check_queues_match_log(store)


async def test_a_shutdown_with_dispatch_held_back_leaves_a_crash_recovery(
    stores: StoreFactory, disk: FaultyDisk
) -> None:
    store = stores.open()
    disk.fill("/consumequeue/")
    assert store.put_message(message(body=b"stored")).ok
    store.shutdown()
    stores.opened.remove(store)
    assert store.config.abort_path.exists()
    disk.free()
    store = stores.open()
    assert store.recovery_report.mode == "abnormal"
    assert bodies(store, "T", 0) == [b"stored"]
