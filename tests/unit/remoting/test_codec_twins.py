"""The record codec's native twins (remoting/native/codec/, the module remoting._codec) against
their pure-Python references: same bytes, same results, same errors, on the same inputs. The
pure code stays the specification (it is what the rest of the unit tests pin against Java's
values and RocketMQ's layouts)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remoting import message as codec
from remoting import record
from remoting.codec_native import native
from remoting.java_hash import python_java_hash
from tests.nativekit import needs_codec

# ------------------------------------------------------------------------------ java_hash


@needs_codec
@given(text=st.text(max_size=300))
def test_java_hash_matches_the_reference(text: str) -> None:
    assert native.java_hash(text) == python_java_hash(text)


@pytest.mark.parametrize("hash_of", ["python", pytest.param("native", marks=needs_codec)])
@pytest.mark.parametrize("text", ["a\ud800b", "\udfff", "x\udc00\ud800"])
def test_java_hash_counts_a_lone_surrogate_as_one_code_unit_like_java(hash_of, text) -> None:
    """Java strings may hold one (the pure hash used to raise UnicodeEncodeError on it)."""
    h = 0
    for unit in map(ord, text):
        h = (31 * h + unit) & 0xFFFFFFFF
    java_hash = native.java_hash if hash_of == "native" else python_java_hash
    assert java_hash(text) == (h - 2**32 if h >= 2**31 else h)


@needs_codec
def test_java_hash_refuses_what_is_not_a_str() -> None:
    with pytest.raises(TypeError, match="takes a str"):
        native.java_hash(b"TagA")


# ------------------------------------------------------------------------------ records

hosts = st.sampled_from([b"\x7f\x00\x00\x01", bytes(range(16))])
records = st.lists(
    st.tuples(
        st.integers(-(2**31), 2**31 - 1),
        st.binary(max_size=300),
        st.text(max_size=60).map(str.encode),
        st.integers(0, 2**31 - 1),
    ),
    min_size=1,
    max_size=6,
)


@needs_codec
@settings(max_examples=200)
@given(
    entries=records,
    topic=st.text(min_size=1, max_size=60).map(str.encode),
    born=hosts,
    store=hosts,
    numbers=st.tuples(
        st.integers(0, 2**31 - 1),
        st.integers(0, 2**62),
        st.integers(0, 2**62),
        st.integers(0, 2**31 - 1),
        st.integers(0, 2**62),
        st.integers(0, 65535),
        st.integers(-(2**31), 2**31 - 1),
    ),
    start=st.integers(0, 64),
)
def test_pack_records_writes_the_same_bytes(entries, topic, born, store, numbers, start) -> None:
    queue_id, queue_offset, phys_offset, sys_flag, timestamp, port, reconsume = numbers
    sys_flag &= ~(record.BORNHOST_V6_FLAG | record.STOREHOSTADDRESS_V6_FLAG)  # set from hosts
    packed = []
    for flag, body, properties, crc in entries:
        size = record.record_size(
            len(body),
            len(topic),
            len(properties),
            born_v6=len(born) == 16,
            store_v6=len(store) == 16,
        )
        packed.append((flag, body, properties, size, crc))
    length = start + sum(item[3] for item in packed)
    fields = dict(
        queue_id=queue_id,
        queue_offset=queue_offset,
        phys_offset=phys_offset,
        sys_flag=sys_flag,
        born_timestamp=timestamp,
        born_address=born,
        born_port=port,
        store_timestamp=timestamp + 1,
        store_address=store,
        store_port=port,
        reconsume_times=reconsume,
        prepared_transaction_offset=phys_offset,
    )
    expected, actual = bytearray(length), bytearray(length)
    record.python_pack_records_into(expected, start, packed, topic, **fields)
    record.pack_records_into(actual, start, packed, topic, **fields)
    assert actual == expected
    scanned = list(record.iter_records(memoryview(actual), start))
    assert [scan.queue_offset for _, scan in scanned] == [
        queue_offset + i for i in range(len(entries))
    ]


@needs_codec
def test_pack_records_refuses_a_record_past_the_buffer_and_writes_nothing() -> None:
    size = record.record_size(3, 1, 0)
    buffer = bytearray(size - 1)
    with pytest.raises(IndexError, match="does not fit"):
        native.pack_records_into(
            buffer, 0, [(0, b"abc", b"", size, 0)], b"T", 0, 0, 0, 0, 0, bytes(4), 0, 0,
            bytes(4), 0, 0, 0,
        )  # fmt: skip
    assert buffer == bytearray(size - 1)


@needs_codec
def test_pack_records_refuses_a_declared_size_that_does_not_add_up() -> None:
    size = record.record_size(3, 1, 0)
    with pytest.raises(AssertionError, match="record size"):
        native.pack_records_into(
            bytearray(500), 0, [(0, b"abc", b"", size + 1, 0)], b"T", 0, 0, 0, 0, 0, bytes(4),
            0, 0, bytes(4), 0, 0, 0,
        )  # fmt: skip


# ------------------------------------------------------------------------------ batch bodies

batch_entries = st.lists(
    st.tuples(
        st.integers(-(2**31), 2**31 - 1),
        st.binary(max_size=100),
        st.text(max_size=40),
    ),
    max_size=8,
)


def _decoded(decode, body: bytes):
    try:
        return [(e.flag, bytes(e.body), e.properties, type(e)) for e in decode(body)]
    except codec.MessageDecodeError as exc:
        return str(exc)


@needs_codec
@given(entries=batch_entries)
def test_batch_bodies_decode_alike(entries) -> None:
    body = codec.encode_batch_body(entries)
    native_result = _decoded(codec.decode_batch_body, body)
    assert native_result == _decoded(codec.python_decode_batch_body, body)
    assert [entry[:3] for entry in native_result] == [
        (flag, data, text) for flag, data, text in entries
    ]


@needs_codec
@given(entries=batch_entries.filter(bool), data=st.data())
def test_damaged_batch_bodies_fail_alike(entries, data) -> None:
    body = bytearray(codec.encode_batch_body(entries))
    cut = data.draw(st.integers(0, len(body)))
    damaged = data.draw(st.sampled_from(["truncate", "flip"]))
    if damaged == "truncate":
        body = body[:cut]
    elif cut < len(body):
        body[cut] ^= data.draw(st.integers(1, 255))
    assert _decoded(codec.decode_batch_body, bytes(body)) == _decoded(
        codec.python_decode_batch_body, bytes(body)
    )


@needs_codec
def test_batch_entry_bodies_are_views_into_the_request() -> None:
    body = codec.encode_batch_body([(0, b"hello", "TAGS\x01A")])
    (entry,) = codec.decode_batch_body(body)
    assert isinstance(entry, codec.BatchEntry) and isinstance(entry.body, memoryview)
    assert entry.body.obj is body


# ------------------------------------------------------------------------------ scanning records


def _one_record(body: bytes, topic: bytes, properties: bytes, born: bytes, store: bytes) -> bytes:
    size = record.record_size(
        len(body), len(topic), len(properties), born_v6=len(born) == 16, store_v6=len(store) == 16
    )
    out = bytearray(size)
    record.python_pack_records_into(
        out, 0, [(3, body, properties, size, codec.body_crc(body))], topic, queue_id=5,
        queue_offset=77, phys_offset=1 << 40, sys_flag=0, born_timestamp=1, born_address=born,
        born_port=2, store_timestamp=1_700_000_000_123, store_address=store, store_port=3,
        reconsume_times=0,
    )  # fmt: skip
    return bytes(out)


def _scans_agree(data: bytes) -> None:
    view = memoryview(data)
    for pos in range(len(data) + 2):
        for check_crc in (False, True):
            assert native.scan_record(view, pos, check_crc=check_crc) == (
                record.python_scan_record(view, pos, check_crc=check_crc)
            ), (pos, check_crc)


@needs_codec
@settings(max_examples=80, deadline=None)
@given(
    body=st.binary(max_size=40),
    topic=st.text(min_size=1, max_size=8).map(str.encode),
    properties=st.text(max_size=12).map(str.encode),
    born=hosts,
    store=hosts,
    data=st.data(),
)
def test_scans_of_valid_damaged_and_cut_records_agree(
    body, topic, properties, born, store, data
) -> None:
    good = _one_record(body, topic, properties, born, store)
    damaged = bytearray(good + good)
    for _ in range(data.draw(st.integers(0, 3))):
        at = data.draw(st.integers(0, len(damaged) - 1))
        damaged[at] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(damaged)))
    _scans_agree(bytes(damaged[:cut]))


@needs_codec
@given(data=st.binary(max_size=200))
def test_scans_of_random_bytes_agree(data: bytes) -> None:
    _scans_agree(data)


@needs_codec
def test_scans_of_blank_zeros_and_bad_utf8_agree() -> None:
    record_bytes = _one_record(b"body", b"T", "a\x01é".encode(), bytes(4), bytes(4))
    bad_utf8 = bytearray(record_bytes)
    bad_utf8[-1] = 0xFF  # the properties' last byte
    blank = bytearray(16)
    record.pack_blank_into(blank, 0, 16)
    for data in (record_bytes, bytes(bad_utf8), bytes(blank), bytes(120)):
        _scans_agree(data)
    assert native.scan_record(memoryview(bytes(bad_utf8)), 0).reason == (
        "topic or properties not UTF-8"
    )


@pytest.mark.parametrize("scan", ["python", pytest.param("native", marks=needs_codec)])
def test_a_size_too_small_for_its_ipv6_header_is_corrupt_not_an_error(scan) -> None:
    data = bytearray(100)
    data[0:8] = (100).to_bytes(4, "big") + (record.MESSAGE_MAGIC_CODE & 0xFFFFFFFF).to_bytes(
        4, "big"
    )
    data[36:40] = (record.BORNHOST_V6_FLAG | record.STOREHOSTADDRESS_V6_FLAG).to_bytes(4, "big")
    found = (native.scan_record if scan == "native" else record.python_scan_record)(
        memoryview(bytes(data)), 0
    )
    assert found.kind is record.RecordKind.CORRUPT
    assert found.reason == "size 100 does not fit its header"
