"""CommitLog appends: layout on disk, segment boundaries, batches, delay topics, limits."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.store.batch_records import dispatch_properties
from broker.store.consume_queue import CQ_UNIT
from broker.store.types import MessageExtBrokerInner, PutMessageStatus
from remoting import message as codec
from remoting.constants import SCHEDULE_TOPIC
from remoting.record import END_FILE_MIN_BLANK_LENGTH, RecordKind, scan_record
from tests.unit.store.conftest import StoreFactory, message


def test_records_never_straddle_segments_and_segments_end_with_a_blank(
    stores: StoreFactory,
) -> None:
    store = stores.open()
    offsets = []
    for i in range(300):
        result = store.put_message(message(body=os.urandom(i % 200 + 1), TAGS="A"))
        assert result.ok
        offsets.append((result.append.wrote_offset, result.append.wrote_bytes))
    size = store.config.mapped_file_size_commit_log
    assert len(store.commit_log.queue.files) > 3
    for start, length in offsets:
        assert start // size == (start + length - 1) // size, "a record crosses a segment boundary"
    for mapped in store.commit_log.queue.files[:-1]:
        position = 0
        while True:
            scan = scan_record(mapped.view, position)
            if scan.kind is not RecordKind.MESSAGE:
                break
            position += scan.size
        assert scan.kind is RecordKind.BLANK and scan.size == size - position
        assert size - position >= END_FILE_MIN_BLANK_LENGTH
    names = sorted(p.name for p in store.config.commit_log_dir.iterdir())
    assert names[:2] == [f"{0:020d}", f"{size:020d}"]


def test_put_assigns_offsets_msg_id_and_queue_offsets_per_queue(stores: StoreFactory) -> None:
    store = stores.open()
    first = store.put_message(message(queue_id=1, body=b"a"))
    second = store.put_message(message(queue_id=1, body=b"b"))
    other = store.put_message(message(queue_id=2, body=b"c"))
    assert (first.append.queue_offset, second.append.queue_offset, other.append.queue_offset) == (
        0,
        1,
        0,
    )
    assert second.append.wrote_offset == first.append.end_offset
    decoded = codec.decode_offset_msg_id(second.append.msg_id)
    assert (decoded.addr, decoded.phys_offset) == ("10.0.0.1:10911", second.append.wrote_offset)
    stored = codec.decode_message(store.look_message_by_offset(second.append.wrote_offset))
    assert (stored.body, stored.queue_offset, stored.store_host) == (b"b", 1, "10.0.0.1:10911")
    assert stored.store_timestamp == second.append.store_timestamp


def test_batch_is_atomic_in_one_segment_with_consecutive_offsets(stores: StoreFactory) -> None:
    store = stores.open()
    filler = store.put_message(message(body=b"x" * 7000))  # leaves too little room for the batch
    entries = [(i, f"body-{i}".encode() * 20, f"TAGS\x01T{i}\x02KEYS\x01k{i}") for i in range(8)]
    batch = MessageExtBrokerInner(
        topic="T", queue_id=0, body=codec.encode_batch_body(entries), properties={"CLUSTER": "c"}
    )
    result = store.put_messages(batch)
    assert result.ok and result.append.msg_num == 8
    assert result.append.wrote_offset == store.config.mapped_file_size_commit_log  # moved whole
    assert result.append.queue_offset == filler.append.queue_offset + 1
    ids = result.append.msg_id.split(",")
    messages = [
        codec.decode_message(
            store.look_message_by_offset(codec.decode_offset_msg_id(i).phys_offset)
        )
        for i in ids
    ]
    assert [m.queue_offset for m in messages] == list(range(1, 9))
    assert [m.flag for m in messages] == list(range(8))
    assert messages[3].properties == {"TAGS": "T3", "KEYS": "k3", "CLUSTER": "c"}


@pytest.mark.parametrize("sys_flag", [0, 0x4, 0x8, 0xC])
@pytest.mark.parametrize("delay", ["", "0", "-1", "3", "x"])
def test_a_batch_that_is_a_transaction_part_or_delayed_is_refused_as_java_does(
    stores: StoreFactory, sys_flag: int, delay: str
) -> None:
    """A refused batch takes no queue offsets: the next message of the queue is served at the
    offset its record names."""
    store = stores.open()
    entries = [(0, b"a", ""), (0, b"b", "")]
    props = {"DELAY": delay} if delay else {}
    batch = MessageExtBrokerInner(
        topic="T", queue_id=0, body=codec.encode_batch_body(entries), properties=props,
        sys_flag=sys_flag,
    )  # fmt: skip
    refused = sys_flag != 0 or (delay.isdigit() and int(delay) > 0)
    result = store.put_messages(batch)
    assert result.ok is not refused
    if refused:
        assert result.status is PutMessageStatus.MESSAGE_ILLEGAL
    after = store.put_message(message(topic="T", queue_id=0, body=b"next"))
    assert after.append.queue_offset == (0 if refused else 2)


def test_delayed_messages_park_in_the_schedule_topic_with_the_deliver_time_as_tags_code(
    stores: StoreFactory,
) -> None:
    store = stores.open()
    result = store.put_message(message(topic="Orders", queue_id=3, DELAY="3", TAGS="A"))
    stored = codec.decode_message(store.look_message_by_offset(result.append.wrote_offset))
    assert (stored.topic, stored.queue_id) == (SCHEDULE_TOPIC, 2)
    assert stored.properties["REAL_TOPIC"] == "Orders" and stored.properties["REAL_QID"] == "3"
    unit = store.find_consume_queue(SCHEDULE_TOPIC, 2).unit(0)
    assert unit[2] == stored.store_timestamp + 10_000  # level 3 = 10s
    clamped = store.put_message(message(DELAY="99"))
    assert (
        codec.decode_message(store.look_message_by_offset(clamped.append.wrote_offset)).queue_id
        == 17
    )


def test_limits_are_refused_with_their_status(stores: StoreFactory) -> None:
    store = stores.open(max_message_size=100)
    assert store.put_message(message(body=b"x" * 101)).status is PutMessageStatus.MESSAGE_ILLEGAL
    assert store.put_message(message(topic="t" * 128)).status is PutMessageStatus.MESSAGE_ILLEGAL
    huge = message(**{"K": "v" * 40000})
    assert store.put_message(huge).status is PutMessageStatus.PROPERTIES_SIZE_EXCEEDED
    assert store.put_message(message(body=b"ok")).ok

    def batch(*entries: tuple[bytes, str], topic: str = "T", **props: str) -> MessageExtBrokerInner:
        body = codec.encode_batch_body([(0, b, p) for b, p in entries])
        return MessageExtBrokerInner(topic=topic, queue_id=0, body=body, properties=props)

    ok, big = (b"ok", "A\x01a"), (b"x" * 101, "A\x01a")
    assert store.put_messages(batch(ok, big)).status is PutMessageStatus.MESSAGE_ILLEGAL
    # batch-level properties are appended to every entry's own
    too_long = batch(ok, ok, K="v" * 40000)
    assert store.put_messages(too_long).status is PutMessageStatus.PROPERTIES_SIZE_EXCEEDED
    assert store.put_messages(batch(ok, topic="t" * 128)).status is PutMessageStatus.MESSAGE_ILLEGAL
    before = store.max_phys_offset
    assert store.put_messages(batch(ok, ok)).ok and store.max_phys_offset > before


def test_a_record_larger_than_a_segment_is_refused_not_written(stores: StoreFactory) -> None:
    store = stores.open(max_message_size=64 * 1024)
    result = store.put_message(message(body=b"x" * 9000))
    assert result.status is PutMessageStatus.CREATE_MAPPED_FILE_FAILED
    assert store.put_message(message(body=b"small")).ok


def test_prepared_transaction_records_take_no_queue_offset(stores: StoreFactory) -> None:
    store = stores.open()
    half = message()
    half.sys_flag = codec.TRANSACTION_PREPARED_TYPE
    assert store.put_message(half).append.queue_offset == 0
    normal = store.put_message(message())
    assert normal.append.queue_offset == 0
    assert store.get_max_offset_in_queue("T", 0) == 1
    unit = store.find_consume_queue("T", 0).unit(0)
    assert unit == (normal.append.wrote_offset, normal.append.wrote_bytes, 0)
    assert CQ_UNIT.size == 20


_NAMES = ["TAGS", "KEYS", "UNIQ_KEY", "DELAY", "XKEYS", "TAG", ""]


@given(
    segments=st.lists(
        st.tuples(st.sampled_from(_NAMES), st.text(alphabet="ab\x01 ", max_size=3)), max_size=8
    ),
    trailing=st.booleans(),
)
def test_dispatch_properties_agree_with_javas_full_parse(segments, trailing) -> None:
    text = "\x02".join(f"{name}\x01{value}" for name, value in segments) + (
        "\x02" if trailing else ""
    )
    full = codec.string_to_properties(text)
    expected = {n: full[n] for n in ("TAGS", "KEYS", "UNIQ_KEY", "DELAY") if n in full}
    assert dispatch_properties(text) == expected
