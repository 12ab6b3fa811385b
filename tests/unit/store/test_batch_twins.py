"""The store's native twins of the per-entry work of a batch put and of dispatch (batch_plan,
dispatch_fields, index_requests, index_put_entries, pack_cq_units; module broker.store._native)
against their pure-Python references: same records, fields, hashes and bytes, and the same
errors, on the same inputs. The AppendCursor's are in test_append_cursor.py."""

from __future__ import annotations

import random
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.store import batch_records as twins
from broker.store.consume_queue import python_pack_cq_units
from broker.store.index_file import (
    HEADER,
    index_file_size,
    python_index_put_entries,
    python_index_request,
    python_index_requests,
    read_header,
)
from broker.store.store_native import native
from broker.store.types import DispatchRequest
from remoting import message as codec
from tests.kits.nativekit import needs_store_native

pytestmark = needs_store_native

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


def _plan(make, body: bytes, batch_properties: bytes, max_body: int, max_props: int):
    try:
        return make(body, batch_properties, 91, max_body, max_props)
    except codec.MessageDecodeError as exc:
        return str(exc)


@given(
    entries=entries,
    batch_text=properties_text,
    trailing=ends_with_separator,
    max_body=st.integers(0, 80),
    max_props=st.integers(0, 80),
)
def test_batch_plans_alike(entries, batch_text, trailing, max_body, max_props) -> None:
    """The native plan's facts (count, total, refused entry, first and refused bodies, the
    refused properties) are the reference's, whose records are each entry's properties
    followed by the batch's, with their sizes and CRCs."""
    body = codec.encode_batch_body(
        [(f, b, text + "\x02" if trailing and text else text) for f, b, text in entries]
    )
    batch_properties = batch_text.encode()

    def native_plan(*args):
        return native.batch_plan(memoryview(args[0]), *args[1:], codec.MessageDecodeError)

    native_result = _plan(native_plan, body, batch_properties, max_body, max_props)
    reference = _plan(twins.python_batch_plan, body, batch_properties, max_body, max_props)
    assert native_result[1:] == reference[1:]
    records, count, total, refused, *_ = reference
    assert count == len(records) and total == sum(record[3] for record in records)
    for _flag, data, properties, size, crc in records:
        assert size == 91 + len(data) + len(properties)
        assert crc == zlib.crc32(data) & 0x7FFFFFFF
    if refused >= 0:
        assert refused == len(records) - 1
        assert len(records[-1][1]) > max_body or len(records[-1][2]) > max_props
    else:
        assert len(records) == len(entries)


def test_body_crcs_are_zlibs_at_every_length_and_alignment() -> None:
    """The body CRC (libdeflate's folding when it is linked, zlib's otherwise: store.h) for
    bodies of 0 to 600 bytes and 4 KiB, each at every start alignment of a 16-byte vector
    (the topic's length moves where the body starts in the record)."""
    rng = random.Random(27)
    cursor = native.AppendCursor("0A00000700002A9F", b"\x0a\x00\x00\x07", 1, DispatchRequest)
    buffer = bytearray(8192)
    for length in [*range(601), 4096, 4097]:
        body = rng.randbytes(length)
        for topic in ("T" * n for n in range(1, 17)):
            cursor.put(
                buffer, 0, 0, 1, 1 << 20, topic, 0, 0, {}, body, 0, 1, (b"\x7f\0\0\x01", 1), 0, 0
            )
            assert int.from_bytes(buffer[8:12], "big") == zlib.crc32(body) & 0x7FFFFFFF


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


# ------------------------------------------------------------------------------ index entries


@settings(max_examples=60, deadline=None)
@given(
    batches=st.lists(
        st.lists(
            st.tuples(
                st.integers(-(2**31), 2**31 - 1),
                st.integers(0, 2**40),
                st.integers(1_699_999_000_000, 1_700_001_000_000),
            ),
            max_size=9,
        ),
        max_size=12,
    ),
    slots=st.integers(1, 7),
)
def test_index_entries_are_written_alike(batches, slots) -> None:
    """Same header, slots and entries; the file fills up (20 entries) and refuses the rest."""
    files = {}
    for name, put in (("native", native.index_put_entries), ("python", python_index_put_entries)):
        buffer = bytearray(index_file_size(slots, 20))
        HEADER.pack_into(buffer, 0, 0, 0, 0, 0, 0, 1)
        counts = [put(buffer, slots, 20, batch) for batch in batches]
        files[name] = (bytes(buffer), counts)
    assert files["native"] == files["python"]


def test_index_entries_refuse_a_geometry_past_the_buffer() -> None:
    buffer = bytearray(index_file_size(4, 10) - 1)
    for put in (native.index_put_entries, python_index_put_entries):
        with pytest.raises(ValueError, match="geometry"):
            put(buffer, 4, 10, [(1, 2, 0)])


@settings(max_examples=200)
@given(
    count=st.integers(0, 14),
    end_phy=st.sampled_from([0, 999, 1000, 4000]),
    keys=st.lists(st.sampled_from(["", "k", "é", "😀", "\ud800"]), max_size=70).map(" ".join),
    uniq=st.sampled_from(["", "U1"]),
    topic=st.sampled_from(["T", "é"]),
    slots=st.integers(1, 7),
)
def test_one_records_index_entries_go_in_whole_or_not_at_all_alike(
    count, end_phy, keys, uniq, topic, slots
) -> None:
    """Same bytes and answer: all of a record's entries when they fit (at most 64), none when
    they do not, nothing new when the file already indexes it (a re-dispatch)."""
    request = DispatchRequest(topic, 1, 1000, 100, 0, 1_700_000_005_000, 3, keys, uniq, 0, {})
    files, answers = [], []
    for index_request in (native.index_request, python_index_request):
        buffer = bytearray(index_file_size(slots, 12))
        HEADER.pack_into(buffer, 0, 1_700_000_000_000, 1_700_000_000_000, 0, end_phy, 0, count)
        answers.append(index_request(buffer, slots, 12, request))
        files.append(bytes(buffer))
    assert answers[0] == answers[1] and files[0] == files[1]


def test_one_records_keys_go_in_uniq_key_first() -> None:
    for index_request in (native.index_request, python_index_request):
        buffer = bytearray(index_file_size(8, 12))
        HEADER.pack_into(buffer, 0, 0, 0, 0, 0, 0, 1)
        request = DispatchRequest("T", 1, 1000, 100, 0, 1_700_000_005_000, 0, "a  b", "U", 0, {})
        assert index_request(buffer, 8, 12, request)
        header = read_header(buffer)
        assert header.index_count == 4 and header.end_phy_offset == 1000  # U, a, b
        crowded = bytearray(index_file_size(8, 12))
        HEADER.pack_into(crowded, 0, 0, 0, 0, 0, 0, 10)
        assert not index_request(crowded, 8, 12, request)  # 3 keys, room for 2: none
        assert read_header(crowded).index_count == 10


# ------------------------------------------------------------------------------ dispatch fields

_FIELD_NAMES = ["TAGS", "KEYS", "UNIQ_KEY", "DELAY", "XKEYS", "TAG", "", "TAGS\x01"]


@given(
    segments=st.lists(
        st.tuples(st.sampled_from(_FIELD_NAMES), st.text(alphabet="ab\x01\x02 é😀", max_size=4)),
        max_size=8,
    ),
    trailing=st.booleans(),
)
def test_dispatch_fields_read_properties_alike(segments, trailing) -> None:
    text = "\x02".join(f"{name}\x01{value}" for name, value in segments) + (
        "\x02" if trailing else ""
    )
    assert native.dispatch_fields(text) == twins.python_dispatch_fields(text)


@given(text=st.text(max_size=80))
def test_dispatch_fields_of_any_text_read_alike(text: str) -> None:
    assert native.dispatch_fields(text) == twins.python_dispatch_fields(text)


class _Int(int):
    """An int subclass: the store's C reads it as it reads an int."""


# Where an int's 30-bit digits change count (the C's int reads take up to two digits in place)
_EDGES = sorted(
    {s * (2**k + d) for k in (0, 15, 30, 31, 59, 60, 61, 62) for d in (-1, 0, 1) for s in (1, -1)}
    | {0, 2**63 - 1, -(2**63)}
)


@pytest.mark.parametrize("value", _EDGES)
def test_int64_reads_at_digit_edges_are_packed_alike(value: int) -> None:
    requests = [
        DispatchRequest("T", 0, value, 7, value, 0, 0, "", "", 0, {}),
        DispatchRequest(
            "T", 0, _Int(value), 7, _Int(-value if value > -(2**63) else 0), 0, 1, "", "", 0, {}
        ),
    ]
    packed = {}
    for name, pack in (("native", native.pack_cq_units), ("python", python_pack_cq_units)):
        buffer = bytearray(40)
        pack(buffer, 0, requests)
        packed[name] = bytes(buffer)
    assert packed["native"] == packed["python"]


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 2**64, -(2**90)])
def test_int64_reads_past_int64_raise_overflow(value: int) -> None:
    buffer = bytearray(20)
    with pytest.raises(OverflowError):
        native.pack_cq_units(buffer, 0, [DispatchRequest("T", 0, 0, 7, value, 0, 0, "", "", 0, {})])
    assert buffer == bytearray(20)
