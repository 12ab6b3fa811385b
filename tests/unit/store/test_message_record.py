"""The native append_message (a single message's record: properties encoded, limits checked,
record packed) against its pure-Python reference: same bytes, same results, same refusals."""

from __future__ import annotations

import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.store import message_record as twins
from broker.store.types import MessageExtBrokerInner
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
