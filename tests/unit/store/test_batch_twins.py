"""The native twins of a batch put's per-entry work (batch_records, batch_requests,
index_requests, pack_cq_units) against their pure-Python references: same records, requests,
hashes and bytes, and the same errors, on the same inputs."""

from __future__ import annotations

import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.store import batch_records as twins
from broker.store.consume_queue import python_pack_cq_units
from broker.store.index_file import HEADER, index_file_size, python_index_requests
from broker.store.types import DispatchRequest
from remoting import message as codec
from remoting.speedups import native
from tests.nativekit import needs_native

pytestmark = needs_native

_NAMES = ["TAGS", "KEYS", "UNIQ_KEY", "DELAY", "WAIT", ""]
_VALUES = st.text(alphabet="ab \x01é😀", max_size=6)
properties_text = st.lists(st.tuples(st.sampled_from(_NAMES), _VALUES), max_size=4).map(
    lambda pairs: "\x02".join(f"{name}\x01{value}" for name, value in pairs)
)
ends_with_separator = st.booleans()
entries = st.lists(
    st.tuples(st.integers(-(2**31), 2**31 - 1), st.binary(max_size=60), properties_text),
    max_size=6,
)


def _records(make, body: bytes, batch_properties: bytes, max_body: int, max_props: int):
    try:
        records, total, refused = make(body, batch_properties, 91, max_body, max_props)
    except codec.MessageDecodeError as exc:
        return str(exc)
    return [(f, bytes(b), p, s, c) for f, b, p, s, c in records], total, refused


@given(
    entries=entries,
    batch_text=properties_text,
    trailing=ends_with_separator,
    max_body=st.integers(0, 80),
    max_props=st.integers(0, 80),
)
def test_batch_records_alike(entries, batch_text, trailing, max_body, max_props) -> None:
    body = codec.encode_batch_body(
        [(f, b, text + "\x02" if trailing and text else text) for f, b, text in entries]
    )
    batch_properties = batch_text.encode()
    native_result = _records(twins.batch_records, body, batch_properties, max_body, max_props)
    assert native_result == _records(
        twins.python_batch_records, body, batch_properties, max_body, max_props
    )
    records, total, refused = native_result
    assert total == sum(record[3] for record in records)
    for _flag, data, properties, size, crc in records:
        assert size == 91 + len(data) + len(properties)
        assert crc == zlib.crc32(data) & 0x7FFFFFFF
    if refused >= 0:
        assert refused == len(records) - 1
        assert len(records[-1][1]) > max_body or len(records[-1][2]) > max_props
    else:
        assert len(records) == len(entries)


@given(entries=entries.filter(bool), data=st.data())
def test_damaged_batch_bodies_fail_alike_even_after_an_oversized_entry(entries, data) -> None:
    body = bytearray(codec.encode_batch_body(entries))
    cut = data.draw(st.integers(0, len(body)))
    if data.draw(st.booleans()):
        body = body[:cut]
    elif cut < len(body):
        body[cut] ^= data.draw(st.integers(1, 255))
    max_body = data.draw(st.integers(0, 80))
    assert _records(twins.batch_records, bytes(body), b"", max_body, 80) == _records(
        twins.python_batch_records, bytes(body), b"", max_body, 80
    )


def test_batch_record_bodies_are_views_into_the_request() -> None:
    body = codec.encode_batch_body([(0, b"hello", "TAGS\x01A")])
    (record,), _total, refused = twins.batch_records(body, b"WAIT\x01true", 91, 100, 100)
    assert isinstance(record[1], memoryview) and record[1].obj is body
    assert record[2] == b"TAGS\x01A\x02WAIT\x01true" and refused == -1


@settings(max_examples=150)
@given(
    entries=entries,
    batch_text=properties_text,
    prefix=st.text(alphabet="0123456789ABCDEF", min_size=32, max_size=32),
    topic=st.text(min_size=1, max_size=10),
    numbers=st.tuples(
        st.integers(0, 2**31 - 1),
        st.integers(0, 2**62),
        st.integers(0, 2**62),
        st.integers(0, 2**62),
        st.integers(0, 2**31 - 1),
    ),
)
def test_batch_requests_alike(entries, batch_text, prefix, topic, numbers) -> None:
    body = codec.encode_batch_body(entries)
    records, _, _ = twins.python_batch_records(body, batch_text.encode(), 91, 100, 100)
    queue_id, phys, queue_offset, store_ts, sys_flag = numbers
    args = (
        records,
        prefix,
        topic,
        queue_id,
        phys,
        queue_offset,
        store_ts,
        sys_flag,
        DispatchRequest,
    )
    ids, requests = twins.batch_requests(*args)
    assert (ids, requests) == twins.python_batch_requests(*args)
    assert all(type(request) is DispatchRequest for request in requests)
    assert ids == [f"{prefix}{request.commit_log_offset:016X}" for request in requests]


keys_text = st.text(alphabet="ab \x00é😀\ud800", max_size=12)
requests = st.lists(
    st.tuples(st.integers(0, 2**40), keys_text, keys_text).map(
        lambda t: DispatchRequest("T", 0, t[0], 100, 0, 1, 0, t[1], t[2], 0, {})
    ),
    max_size=8,
)


@given(
    calls=st.lists(st.tuples(requests, st.integers(1, 2**42), st.booleans()), max_size=6),
    prefix=st.text(max_size=6),
    slots=st.integers(1, 7),
    max_entries=st.integers(1, 12),
    begin=st.tuples(st.integers(0, 2**40), st.integers(0, 2**42)),
)
def test_index_requests_alike(calls, prefix, slots, max_entries, begin) -> None:
    """Same file bytes (header, slots, entries) and the same leftovers, call after call: the
    file fills, later records repeat or go below what it indexes (recovery re-dispatch), and a
    call's records share a store time or not."""
    size = index_file_size(slots, max_entries)
    files = {name: bytearray(size) for name in ("native", "python")}
    for buffer in files.values():
        HEADER.pack_into(buffer, 0, begin[1], begin[1], begin[0], begin[0], 0, 1)
    for batch, store_ts, one_time in calls:  # a batch's entries, or a run read back
        batch = [
            request._replace(store_timestamp=store_ts + (0 if one_time else 1500 * i))
            for i, request in enumerate(batch)
        ]
        left = native.index_requests(files["native"], slots, max_entries, batch, prefix)
        assert left == python_index_requests(files["python"], slots, max_entries, batch, prefix)
        assert files["native"] == files["python"]


@given(
    units=st.lists(
        st.tuples(
            st.integers(0, 2**63 - 1), st.integers(0, 2**31 - 1), st.integers(-(2**63), 2**63 - 1)
        ),
        max_size=40,
    ),
    position=st.integers(0, 40),
)
def test_consume_queue_units_are_packed_alike(units, position) -> None:
    requests = [
        DispatchRequest("T", 0, p, s, t, 0, i, "", "", 0, {}) for i, (p, s, t) in enumerate(units)
    ]
    size = position + 20 * len(units) + 7
    packed = {}
    for name, pack in (("native", native.pack_cq_units), ("python", python_pack_cq_units)):
        buffer = bytearray(b"\xee" * size)
        pack(buffer, position, requests)
        packed[name] = bytes(buffer)
    assert packed["native"] == packed["python"]


def test_consume_queue_units_past_the_buffer_are_refused_and_nothing_written() -> None:
    buffer = bytearray(50)
    request = DispatchRequest("T", 0, 1, 2, 3, 0, 0, "", "", 0, {})
    with pytest.raises(IndexError):
        native.pack_cq_units(buffer, 20, [request, request])
    assert buffer == bytearray(50)
