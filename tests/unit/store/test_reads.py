"""get_message statuses and offsets (RocketMQ's getMessage rules), time search, queries."""

from __future__ import annotations

import pytest

from broker.store.types import GetMessageStatus as S
from broker.store.types import MessageExtBrokerInner, TagsFilter
from remoting import message as codec
from remoting.java_hash import tags_code
from tests.unit.store.conftest import StoreFactory, message


def tags(*names: str) -> TagsFilter:
    return TagsFilter(frozenset(tags_code(n) for n in names))


@pytest.fixture
def filled(stores: StoreFactory):
    store = stores.open()
    for i in range(10):
        assert store.put_message(
            message(queue_id=0, body=f"m{i}".encode(), TAGS="A" if i % 2 else "B")
        ).ok
    return store


def test_found_returns_the_stored_bytes_in_order(filled) -> None:
    result = filled.get_message("G", "T", 0, 2, 4, None)
    assert result.status is S.FOUND and result.message_count == 4
    assert [codec.decode_message(b).body for b in result.buffers] == [b"m2", b"m3", b"m4", b"m5"]
    assert (result.next_begin_offset, result.min_queue_offset, result.max_queue_offset) == (
        6,
        0,
        10,
    )
    assert result.buffer_total_size == sum(len(b) for b in result.buffers)


def test_tag_filter_skips_units_and_counts_them_in_next_offset(filled) -> None:
    result = filled.get_message("G", "T", 0, 0, 3, tags("A"))
    assert [codec.decode_message(b).body for b in result.buffers] == [b"m1", b"m3", b"m5"]
    assert result.next_begin_offset == 6  # m0..m5 scanned, m6 not
    none = filled.get_message("G", "T", 0, 0, 32, tags("C"))
    assert none.status is S.NO_MATCHED_MESSAGE and none.next_begin_offset == 10


@pytest.mark.parametrize(
    ("offset", "status", "next_offset"),
    [(10, S.OFFSET_OVERFLOW_ONE, 10), (15, S.OFFSET_OVERFLOW_BADLY, 0)],
)
def test_offsets_outside_the_queue(filled, offset: int, status: S, next_offset: int) -> None:
    result = filled.get_message("G", "T", 0, offset, 32, None)
    assert (result.status, result.next_begin_offset) == (status, next_offset)


def test_unknown_and_empty_queues(stores: StoreFactory) -> None:
    store = stores.open()
    assert store.get_message("G", "nope", 0, 0, 32, None).status is S.NO_MATCHED_LOGIC_QUEUE
    assert store.get_max_offset_in_queue("nope", 0) == 0
    assert store.get_min_offset_in_queue("nope", 0) == -1
    assert store.get_earliest_message_time("nope", 0) == -1


def test_transfer_caps_limit_a_batch(stores: StoreFactory) -> None:
    store = stores.open(max_transfer_count_on_message_in_memory=3)
    for _ in range(10):
        store.put_message(message())
    assert store.get_message("G", "T", 0, 0, 32, None).message_count == 3


def test_offset_by_time_picks_the_nearest_message(stores: StoreFactory) -> None:
    clock = iter(range(1_000, 100_000, 1_000))
    store = stores.open()
    store.commit_log.clock = lambda: next(clock)
    for _ in range(10):
        store.put_message(message())  # stored at 1000, 2000, ... 10000
    assert store.get_offset_in_queue_by_time("T", 0, 4000) == 3
    assert store.get_offset_in_queue_by_time("T", 0, 4400) == 3
    assert store.get_offset_in_queue_by_time("T", 0, 4600) == 4
    assert store.get_offset_in_queue_by_time("T", 0, 0) == 0
    assert store.get_offset_in_queue_by_time("T", 0, 99_999) == 9
    assert store.get_earliest_message_time("T", 0) == 1000


def test_query_by_key_and_unique_key_within_a_time_range(stores: StoreFactory) -> None:
    store = stores.open()
    for i in range(200):  # spans several index files (256 entries each, 2 keys per message)
        store.put_message(message(KEYS=f"order-{i % 50} shared", UNIQ_KEY=f"U{i:04d}"))
    found = store.query_message("T", "order-7", 64, 0, 2**62)
    assert sorted(codec.decode_message(b).properties["UNIQ_KEY"] for b in found.buffers) == [
        "U0007",
        "U0057",
        "U0107",
        "U0157",
    ]
    assert [
        codec.decode_message(b).msg_id
        for b in store.query_message("T", "U0123", 64, 0, 2**62).buffers
    ] == ["U0123"]
    assert len(store.query_message("T", "shared", 64, 0, 2**62).buffers) == 64  # maxMsgsNumBatch
    assert store.query_message("T", "order-7", 64, 0, 1).buffers == []
    assert store.query_message("Other", "order-7", 64, 0, 2**62).buffers == []
    assert len(store.index_service.files) > 1


def test_message_index_enable_takes_effect_on_a_running_store(stores: StoreFactory) -> None:
    """messageIndexEnable is live, as Java reads it per record: updateBrokerConfig sets it on
    the running config object (broker/config_update.py apply_live) and the next put obeys."""
    store = stores.open()

    def keys_found() -> list[str]:
        found = store.query_message("T", "k", 64, 0, 2**62).buffers
        return sorted(codec.decode_message(b).properties["UNIQ_KEY"] for b in found)

    assert store.put_message(message(KEYS="k", UNIQ_KEY="U1")).ok
    object.__setattr__(store.config, "message_index_enable", False)
    assert store.put_message(message(KEYS="k", UNIQ_KEY="U2")).ok
    assert store.put_messages(batch_of("T", "k", "U3")).ok
    assert keys_found() == ["U1"]
    object.__setattr__(store.config, "message_index_enable", True)
    assert store.put_message(message(KEYS="k", UNIQ_KEY="U4")).ok
    assert store.put_messages(batch_of("T", "k", "U5")).ok
    assert keys_found() == ["U1", "U4", "U5"]


def batch_of(topic: str, key: str, uniq_key: str) -> MessageExtBrokerInner:
    body = codec.encode_batch_body([(0, b"b", f"KEYS\x01{key}\x02UNIQ_KEY\x01{uniq_key}")])
    return MessageExtBrokerInner(topic=topic, queue_id=0, body=body)


def test_a_batch_spans_commit_log_segments_and_respects_the_byte_cap(stores: StoreFactory) -> None:
    store = stores.open(max_transfer_bytes_on_message_in_memory=4000)
    bodies = [bytes([65 + i % 26]) * 300 for i in range(40)]
    for body in bodies:
        assert store.put_message(message(body=body)).ok
    assert len(store.commit_log.queue.files) > 1  # the reads below cross segment boundaries
    got, offset = [], 0
    while offset < 40:
        result = store.get_message("G", "T", 0, offset, 32, None)
        assert result.status is S.FOUND
        assert 0 < result.buffer_total_size <= 4000
        got += [codec.decode_message(b).body for b in result.buffers]
        offset = result.next_begin_offset
    assert got == bodies
