"""The native append_message (a single message's record: properties encoded, limits checked,
record packed) and put_single (that append with the CommitLog's bookkeeping) against their
pure-Python references: same bytes, same results, same state, same refusals."""

from __future__ import annotations

import zlib
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.store import message_record as twins
from broker.store.types import DispatchRequest, MessageExtBrokerInner
from remoting.record import RecordKind, python_scan_record
from remoting.speedups import native
from tests.nativekit import needs_native

pytestmark = needs_native

_VALUES = st.text(alphabet="ab \x01é😀", max_size=6)
properties = st.dictionaries(
    st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "DELAY", "WAIT", "", "é"]),
    st.one_of(st.none(), _VALUES, st.integers(-3, 3)),
    max_size=6,
)
hosts = st.sampled_from([b"\x7f\x00\x00\x01", bytes(range(16))])


def _append(append, buffer: bytearray, position: int, msg, topic: bytes, store: bytes, max_body):
    try:
        outcome = append(
            buffer, position, 1 << 30, msg, topic, 7, 1_700_000_000_123, store, 10911, max_body,
            twins.RecordRefused, zlib.crc32,
        )  # fmt: skip
    except twins.RecordRefused as refused:
        return ("refused", refused.status, refused.remark)
    except (TypeError, ValueError, UnicodeEncodeError, IndexError) as exc:
        return (type(exc),)
    return outcome


@given(
    props=properties,
    body=st.binary(max_size=40),
    topic=st.sampled_from([b"T", b"t" * 127, b"t" * 128]),
    born=hosts,
    store=hosts,
    room=st.integers(0, 400),
    max_body=st.integers(0, 50),
    numbers=st.tuples(
        st.integers(-(2**31), 2**31 - 1),
        st.integers(0, 2**31 - 1).map(lambda flag: flag & ~0x30),  # the hosts set the v6 bits
    ),
)
def test_append_message_alike(props, body, topic, born, store, room, max_body, numbers) -> None:
    flag, sys_flag = numbers
    msg = MessageExtBrokerInner(
        topic="T", queue_id=3, body=body, properties=props, flag=flag, sys_flag=sys_flag,
        born_timestamp=1_700_000_000_000, born_host=(born, 40000), reconsume_times=2,
        prepared_transaction_offset=99,
    )  # fmt: skip
    buffers = {name: bytearray(16 + room) for name in ("native", "python")}
    outcome = _append(native.append_message, buffers["native"], 16, msg, topic, store, max_body)
    assert outcome == _append(
        twins.python_append_message, buffers["python"], 16, msg, topic, store, max_body
    )
    assert buffers["native"] == buffers["python"]
    if isinstance(outcome, tuple) and outcome[0] != "refused" and len(outcome) == 4:
        scan = python_scan_record(memoryview(buffers["native"]), 16, check_crc=True)
        assert scan.kind is RecordKind.MESSAGE and scan.size == outcome[0]


def test_a_record_that_does_not_fit_comes_back_as_its_size_with_nothing_written() -> None:
    msg = MessageExtBrokerInner(topic="T", queue_id=0, body=b"x" * 10, properties={"TAGS": "A"})
    for append in (native.append_message, twins.python_append_message):
        buffer = bytearray(115)  # the record takes 108, and the BLANK filler 8 more
        size = _append(append, buffer, 0, msg, b"T", b"\x7f\x00\x00\x01", 100)
        assert size == 91 + 10 + 1 + len("TAGS\x01A") and buffer == bytearray(115)


@pytest.mark.parametrize(
    ("props", "topic", "body", "status"),
    [
        ({}, b"t" * 128, b"", "MESSAGE_ILLEGAL"),
        ({"K": "v" * 32767}, b"T", b"", "PROPERTIES_SIZE_EXCEEDED"),
        ({}, b"T", b"x" * 11, "MESSAGE_ILLEGAL"),
    ],
)
def test_refusals_name_the_limit(props, topic, body, status) -> None:
    msg = MessageExtBrokerInner(topic="T", queue_id=0, body=body, properties=props)
    outcomes = [
        _append(append, bytearray(1 << 16), 0, msg, topic, b"\x7f\x00\x00\x01", 10)
        for append in (native.append_message, twins.python_append_message)
    ]
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][:2] == ("refused", status) and "max" in outcomes[0][2]


def test_the_limits_themselves_are_allowed() -> None:
    """127-byte topic, 32767 bytes of properties, a body of exactly maxMessageSize."""
    msg = MessageExtBrokerInner(
        topic="T", queue_id=0, body=b"x" * 10, properties={"K": "v" * (32767 - 2)}
    )
    for append in (native.append_message, twins.python_append_message):
        outcome = _append(append, bytearray(1 << 16), 0, msg, b"t" * 127, b"\x7f\x00\x00\x01", 10)
        assert outcome[0] == 91 + 10 + 127 + 32767


def _log_and_segment(room: int, table: dict) -> tuple[SimpleNamespace, SimpleNamespace]:
    """What put_single reads and moves on of a CommitLog and its writable MappedFile."""
    ticks = iter(range(1_700_000_000_000, 1_700_000_001_000))
    commit_log = SimpleNamespace(
        topic_queue_table=dict(table),
        clock=lambda: next(ticks),
        store_address=b"\x0a\x00\x00\x07",
        store_port=10911,
        config=SimpleNamespace(max_message_size=30),
        msg_id_prefix="0A00000700002A9F",
        last_put_timestamp=0,
    )
    mapped = SimpleNamespace(mmap=bytearray(24 + room), wrote_position=24, start_offset=1 << 30)
    return commit_log, mapped


def _put(put, commit_log, mapped, msg):
    try:
        return put(commit_log, mapped, msg)
    except twins.RecordRefused as refused:
        return ("refused", refused.status, refused.remark)
    except (TypeError, ValueError, UnicodeEncodeError, IndexError) as exc:
        return (type(exc),)


@given(
    props=properties,
    body=st.binary(max_size=40),
    topic=st.sampled_from(["T", "é" * 63, "t" * 128]),
    queue_id=st.integers(0, 3),
    sys_flag=st.sampled_from([0, 0x4, 0x8, 0xC, 0x1]),
    room=st.integers(0, 300),
    table=st.dictionaries(st.tuples(st.just("T"), st.integers(0, 3)), st.integers(0, 2**40)),
)
def test_put_single_alike(props, body, topic, queue_id, sys_flag, room, table) -> None:
    """Same record, same result and dispatch request, same state moved on (write position,
    the queue's next offset, the last put time), or the same size back with nothing changed,
    or the same refusal."""
    msg = MessageExtBrokerInner(
        topic=topic, queue_id=queue_id, body=body, properties=props, sys_flag=sys_flag,
        born_timestamp=1_700_000_000_000, born_host=(b"\x7f\x00\x00\x01", 40000),
    )  # fmt: skip
    states = {name: _log_and_segment(room, table) for name in ("native", "python")}
    outcomes = {
        "native": _put(native.put_single, *states["native"], msg),
        "python": _put(twins.python_put_single, *states["python"], msg),
    }
    assert outcomes["native"] == outcomes["python"]
    (log, mapped), (twin_log, twin_mapped) = states["native"], states["python"]
    assert mapped.mmap == twin_mapped.mmap and mapped.wrote_position == twin_mapped.wrote_position
    assert log.topic_queue_table == twin_log.topic_queue_table
    assert log.last_put_timestamp == twin_log.last_put_timestamp
    outcome = outcomes["native"]
    if isinstance(outcome, tuple) and len(outcome) == 2:
        result, request = outcome
        assert result.ok and type(request) is DispatchRequest
        assert result.append.msg_id == f"0A00000700002A9F{(1 << 30) + 24:016X}"
        assert mapped.wrote_position == 24 + result.append.wrote_bytes


def test_put_single_of_a_record_that_does_not_fit_changes_nothing() -> None:
    msg = MessageExtBrokerInner(topic="T", queue_id=0, body=b"x" * 10, properties={"TAGS": "A"})
    for put in (native.put_single, twins.python_put_single):
        commit_log, mapped = _log_and_segment(115, {("T", 0): 5})
        assert put(commit_log, mapped, msg) == 91 + 10 + 1 + len("TAGS\x01A")
        assert mapped.wrote_position == 24 and mapped.mmap == bytearray(24 + 115)
        assert commit_log.topic_queue_table == {("T", 0): 5} and not commit_log.last_put_timestamp
