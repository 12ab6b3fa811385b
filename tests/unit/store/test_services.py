"""The store's services under Trio: group commit, async flush, reput for replicated bytes."""

from __future__ import annotations

import trio

from broker.store.config import FlushDiskType
from broker.store.message_store import DefaultMessageStore
from broker.store.types import PutMessageStatus
from remoting import message as codec
from tests.unit.store.conftest import StoreFactory, message, small_config


async def test_sync_flush_acknowledges_once_the_bytes_are_durable(stores: StoreFactory) -> None:
    store = stores.open(flush_disk_type=FlushDiskType.SYNC_FLUSH)
    async with trio.open_nursery() as nursery:
        await nursery.start(store.run)
        results = [store.put_message(message(body=b"x" * 100)) for _ in range(50)]
        with trio.fail_after(10):
            statuses = [await store.wait_flushed(r.append.end_offset, 5) for r in results]
        assert statuses == [PutMessageStatus.PUT_OK] * 50
        assert store.commit_log.queue.flushed_where >= results[-1].append.end_offset
        nursery.cancel_scope.cancel()


async def test_flush_timeout_is_reported(stores: StoreFactory) -> None:
    store = stores.open(flush_disk_type=FlushDiskType.SYNC_FLUSH)
    result = store.put_message(message())
    # No flush service running: the wait must end with FLUSH_DISK_TIMEOUT, not hang.
    with trio.fail_after(5):
        assert (
            await store.wait_flushed(result.append.end_offset, 0.05)
            is PutMessageStatus.FLUSH_DISK_TIMEOUT
        )


async def test_cancelling_run_stops_cleanly(stores: StoreFactory) -> None:
    store = stores.open()
    async with trio.open_nursery() as nursery:
        await nursery.start(store.run)
        store.put_message(message())
        nursery.cancel_scope.cancel()
    assert not store.config.abort_path.exists()
    stores.opened.remove(store)
    assert stores.open().recovery_report.mode == "normal"


async def test_slave_dispatches_replicated_bytes_including_records_cut_by_chunks(tmp_path) -> None:
    master = DefaultMessageStore(small_config(tmp_path / "m"), store_host=("10.0.0.1", 10911))
    master.load()
    for i in range(200):
        master.put_message(message(queue_id=i % 3, body=f"m{i}".encode() * 10, KEYS=f"k{i}"))
    from broker.store.config import BrokerRole

    slave = DefaultMessageStore(
        small_config(tmp_path / "s", broker_role=BrokerRole.SLAVE), store_host=("10.0.0.2", 10911)
    )
    slave.load()
    assert slave.put_message(message()).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    async with trio.open_nursery() as nursery:
        await nursery.start(slave.run)
        offset = 0
        while offset < master.max_phys_offset:
            data = master.get_commit_log_data(offset)[:333]  # chunks that cut records in half
            assert slave.append_to_commit_log(offset, data)
            offset += len(data)
            await trio.sleep(0)
        with trio.fail_after(5):
            # Dispatch follows the log: once the last record's queue is there, all are.
            while any(
                slave.get_max_offset_in_queue("T", q) < master.get_max_offset_in_queue("T", q)
                for q in range(3)
            ):
                await trio.sleep(0.01)
        assert not slave.append_to_commit_log(offset + 10, b"gap")  # not at the end: refused
        for queue_id in range(3):
            assert slave.get_max_offset_in_queue("T", queue_id) == master.get_max_offset_in_queue(
                "T", queue_id
            )
        got = slave.get_message("G", "T", 1, 0, 32, None)
        assert [codec.decode_message(b).body for b in got.buffers][:2] == [b"m1" * 10, b"m4" * 10]
        assert [
            codec.decode_message(b).keys
            for b in slave.query_message("T", "k77", 4, 0, 2**62).buffers
        ] == ["k77"]
        nursery.cancel_scope.cancel()
    master.shutdown()
