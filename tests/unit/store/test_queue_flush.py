"""FlushConsumeQueueService visits only the ConsumeQueues dispatch wrote since they were last
found flushed (ConsumeQueueTable.dirty), not every queue of the broker each round."""

from __future__ import annotations

from tests.unit.store.conftest import StoreFactory, crash, message


def put_in(store, *queue_ids: int, topic: str = "T") -> None:  # type: ignore[no-untyped-def]
    for queue_id in queue_ids:
        assert store.put_message(message(topic=topic, queue_id=queue_id)).ok


async def test_a_round_flushes_the_written_queues_and_forgets_them(stores: StoreFactory) -> None:
    store = stores.open()
    put_in(store, *range(8))
    await store.flush_queues.flush_once(0, thorough=True)
    assert store.consume_queues.dirty == set()
    put_in(store, 2, 5)
    written = {store.consume_queues.find("T", 2), store.consume_queues.find("T", 5)}
    assert store.consume_queues.dirty == written
    await store.flush_queues.flush_once(0, thorough=False)
    assert store.consume_queues.dirty == set()
    assert all(queue.queue.dirty_bytes() == 0 for queue in written)


async def test_a_queue_under_the_least_pages_waits_for_a_write_or_the_thorough_round(
    stores: StoreFactory,
) -> None:
    store = stores.open()
    put_in(store, 0)
    queue = store.consume_queues.find("T", 0)
    planned = 0
    plan = queue.queue.flush_plan

    def counted(least_pages: int):  # type: ignore[no-untyped-def]
        nonlocal planned
        planned += 1
        return plan(least_pages)

    queue.queue.flush_plan = counted  # type: ignore[method-assign]
    await store.flush_queues.flush_once(2, thorough=False)  # 20 bytes: under 2 pages
    assert planned == 1 and queue.queue.dirty_bytes() > 0
    for _ in range(3):  # not written since: the same answer, so not asked again
        await store.flush_queues.flush_once(2, thorough=False)
    assert planned == 1 and queue not in store.consume_queues.dirty
    put_in(store, 0)
    await store.flush_queues.flush_once(2, thorough=False)
    assert planned == 2 and queue.queue.dirty_bytes() > 0
    await store.flush_queues.flush_once(0, thorough=True)
    assert planned == 3 and queue.queue.dirty_bytes() == 0
    await store.flush_queues.flush_once(0, thorough=True)
    assert planned == 3  # flushed: forgotten until written


async def test_a_deleted_topic_leaves_the_set(stores: StoreFactory) -> None:
    store = stores.open()
    put_in(store, 0, topic="Gone")
    store.consume_queues.delete_topic("Gone")
    assert store.consume_queues.dirty == set()
    await store.flush_queues.flush_once(0, thorough=True)


async def test_a_restarted_store_looks_at_every_queue_once(stores: StoreFactory) -> None:
    store = stores.open()
    put_in(store, 0, 1, 2)
    crash(store)  # units written, never flushed: the page cache keeps them
    stores.opened.remove(store)
    store = stores.open()
    assert len(store.consume_queues.dirty) == 3
    await store.flush_queues.flush_once(0, thorough=True)
    assert store.consume_queues.dirty == set()
    assert all(queue.queue.dirty_bytes() == 0 for queue in store.consume_queues)
