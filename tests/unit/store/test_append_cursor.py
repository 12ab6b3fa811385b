"""The AppendCursor (broker/store/append_cursor.py): the native cursor against its pure-Python
reference, put by put (same record bytes, same message ids and dispatch requests, same queue
table and last put time moved on, or the same size back or the same refusal with nothing
changed; batches: test_batch_dispatch.py), and what either cursor promises on its own: a read-only table, limits checked in
Java's order, nothing half-changed by an error."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.store.append_cursor import (
    PythonAppendCursor,
    PythonRecordRefused,
    RecordRefused,
)
from broker.store.batch_records import python_batch_plan
from broker.store.store_native import native
from broker.store.types import DispatchRequest
from remoting import message as codec
from remoting.record import RecordKind, python_scan_record
from tests.kits.nativekit import needs_store_native

PREFIX = "0A00000700002A9F"
STORE = b"\x0a\x00\x00\x07"
START = 1 << 30
CURSORS = [PythonAppendCursor] + ([native.AppendCursor] if native is not None else [])

_VALUES = st.text(alphabet="ab \x01é😀", max_size=6)
properties = st.dictionaries(
    st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "DELAY", "WAIT", "", "é"]),
    st.one_of(st.none(), _VALUES, st.integers(-3, 3)),
    max_size=6,
)
hosts = st.sampled_from([b"\x7f\x00\x00\x01", bytes(range(16))])


def _cursor(kind, table: dict, store: bytes = STORE):
    cursor = kind(PREFIX, store, 10911, DispatchRequest)
    for (topic, queue_id), next_offset in table.items():
        cursor.set_queue_offset(topic, queue_id, next_offset)
    return cursor


def _put(cursor, buffer, position, msg: dict, max_body: int = 30):
    try:
        return cursor.put(
            buffer, position, START, 1_700_000_000_123, max_body, msg["topic"], msg["queue_id"],
            msg["sys_flag"], msg["properties"], msg["body"], msg.get("flag", 0),
            1_700_000_000_000, msg.get("born_host", (b"\x7f\x00\x00\x01", 40000)), 2, 99,
        )  # fmt: skip
    except (RecordRefused, PythonRecordRefused) as refused:
        return ("refused", *refused.args)
    except (TypeError, ValueError, UnicodeEncodeError, IndexError) as exc:
        return (type(exc),)


def _state(cursor, buffer) -> tuple:
    return bytes(buffer), dict(cursor.queue_offsets), cursor.last_put_timestamp


@needs_store_native
@settings(max_examples=300)
@given(
    props=properties,
    body=st.binary(max_size=40),
    topic=st.sampled_from(["T", "é" * 63, "t" * 127, "t" * 128, "\ud800"]),
    queue_id=st.integers(0, 3),
    sys_flag=st.sampled_from([0, 0x4, 0x8, 0xC, 0x1]),
    flag=st.integers(-(2**31), 2**31 - 1),
    born=hosts,
    store=hosts,
    room=st.integers(0, 300),
    max_body=st.integers(0, 50),
    table=st.dictionaries(st.tuples(st.just("T"), st.integers(0, 3)), st.integers(0, 2**40)),
    # the C reads exact bytes in place and other buffers through the protocol
    wrap=st.sampled_from([bytes, bytes, bytearray, memoryview]),
)
def test_put_alike(
    props, body, topic, queue_id, sys_flag, flag, born, store, room, max_body, table, wrap
) -> None:
    msg = dict(
        topic=topic, queue_id=queue_id, sys_flag=sys_flag, properties=props, body=wrap(body),
        flag=flag, born_host=(wrap(born), 40000),
    )  # fmt: skip
    outcomes, states = [], []
    for kind in (native.AppendCursor, PythonAppendCursor):
        cursor, buffer = _cursor(kind, table, store), bytearray(24 + room)
        outcomes.append(_put(cursor, buffer, 24, msg, max_body))
        states.append(_state(cursor, buffer))
    assert outcomes[0] == outcomes[1]
    assert states[0] == states[1]
    outcome = outcomes[0]
    if isinstance(outcome, tuple) and len(outcome) == 2:
        msg_id, request = outcome
        assert type(request) is DispatchRequest and msg_id == f"{PREFIX}{START + 24:016X}"
        scan = python_scan_record(memoryview(states[0][0]), 24, check_crc=True)
        assert scan.kind is RecordKind.MESSAGE and scan.size == request.msg_size
        assert scan.queue_offset == request.consume_queue_offset


@pytest.mark.parametrize("kind", CURSORS)
def test_a_record_that_does_not_fit_comes_back_as_its_size_and_changes_nothing(kind) -> None:
    cursor = _cursor(kind, {("T", 0): 5})
    buffer = bytearray(24 + 115)  # the record takes 108, and the BLANK filler 8 more
    msg = dict(topic="T", queue_id=0, sys_flag=0, properties={"TAGS": "A"}, body=b"x" * 10)
    assert _put(cursor, buffer, 24, msg) == 91 + 10 + 1 + len("TAGS\x01A")
    assert _state(cursor, buffer) == (bytes(24 + 115), {("T", 0): 5}, 0)


@pytest.mark.parametrize("kind", CURSORS)
@pytest.mark.parametrize(
    ("props", "topic", "body", "status"),
    [
        ({}, "t" * 128, b"", "MESSAGE_ILLEGAL"),
        ({"K": "v" * 32767}, "T", b"", "PROPERTIES_SIZE_EXCEEDED"),
        ({}, "T", b"x" * 11, "MESSAGE_ILLEGAL"),
    ],
)
def test_refusals_name_the_limit_and_change_nothing(kind, props, topic, body, status) -> None:
    cursor, buffer = _cursor(kind, {}), bytearray(1 << 16)
    msg = dict(topic=topic, queue_id=0, sys_flag=0, properties=props, body=body)
    outcome = _put(cursor, buffer, 0, msg, max_body=10)
    assert outcome[:2] == ("refused", status) and "max" in outcome[2]
    assert _state(cursor, buffer) == (bytes(1 << 16), {}, 0)


@pytest.mark.parametrize("kind", CURSORS)
def test_the_limits_themselves_are_allowed(kind) -> None:
    """127-byte topic, 32767 bytes of properties, a body of exactly maxMessageSize."""
    msg = dict(
        topic="t" * 127, queue_id=0, sys_flag=0, properties={"K": "v" * (32767 - 2)}, body=b"x" * 10
    )
    _, request = _put(_cursor(kind, {}), bytearray(1 << 16), 0, msg, max_body=10)
    assert request.msg_size == 91 + 10 + 127 + 32767


@pytest.mark.parametrize("kind", CURSORS)
def test_prepared_and_rolled_back_halves_take_no_queue_offset(kind) -> None:
    cursor, buffer = _cursor(kind, {("T", 0): 3}), bytearray(4096)
    position = 0
    for sys_flag in (0x4, 0xC, 0x8, 0x0):
        msg = dict(topic="T", queue_id=0, sys_flag=sys_flag, properties={}, body=b"b")
        _, request = _put(cursor, buffer, position, msg)
        position += request.msg_size
        assert request.consume_queue_offset == (0 if sys_flag & 0x4 else request[6])
    assert dict(cursor.queue_offsets) == {("T", 0): 5}


@pytest.mark.parametrize("kind", CURSORS)
def test_the_queue_table_is_read_only_outside_the_cursor(kind) -> None:
    cursor = _cursor(kind, {("T", 0): 4, ("T", 1): 9})
    with pytest.raises(TypeError):
        cursor.queue_offsets[("T", 0)] = 0  # type: ignore[index]
    assert cursor.queue_offset("T", 0) == 4 and cursor.queue_offset("U", 0) == 0
    cursor.remove_queue("T", 1)
    cursor.remove_queue("T", 7)  # not there: nothing to forget
    assert dict(cursor.queue_offsets) == {("T", 0): 4}
    with pytest.raises(ValueError, match=">= 0"):
        cursor.set_queue_offset("T", 0, -1)
    cursor.clear_queue_offsets()
    assert dict(cursor.queue_offsets) == {}


@pytest.mark.parametrize("kind", CURSORS)
def test_a_batch_that_fails_midway_leaves_the_cursor_as_it_was(kind) -> None:
    """A batch whose second record does not hold together (our bug, not the client's: a
    declared size that does not add up, or a native plan pointing past the body) fails after
    the first record went into the buffer: the table and last put time stay."""
    body = codec.encode_batch_body([(0, b"a", ""), (0, b"b", "")])
    if kind is PythonAppendCursor:
        records, *_ = python_batch_plan(body, b"", 92, 100, 100)
        records[1] = (*records[1][:3], records[1][3] + 1, records[1][4])
        expected = AssertionError
    else:
        (view, batch, plan), *_ = native.batch_plan(
            memoryview(body), b"", 92, 100, 100, codec.MessageDecodeError
        )
        records, expected = (view[: len(body) // 2], batch, plan), ValueError
    cursor = _cursor(kind, {("B", 0): 7})
    with pytest.raises(expected):
        cursor.put_batch_dispatch(bytearray(1024), 0, 0, 5, records, "B", 0, 0, 1, (STORE, 1), 0)
    assert dict(cursor.queue_offsets) == {("B", 0): 7} and cursor.last_put_timestamp == 0


@pytest.mark.parametrize("kind", CURSORS)
def test_a_cursor_refuses_what_cannot_be_a_store_host(kind) -> None:
    with pytest.raises(ValueError, match="4 or 16 bytes"):
        kind(PREFIX, b"\x01\x02\x03", 10911, DispatchRequest)
    with pytest.raises(TypeError, match="tuple subclass"):
        kind(PREFIX, STORE, 10911, dict)
