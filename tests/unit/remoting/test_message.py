"""The stored-message record codec against Java's layout and hash/CRC values."""

from __future__ import annotations

import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from remoting import message as m
from remoting.record import (
    RecordKind,
    RecordScan,
    pack_blank_into,
    pack_record_into,
    record_size,
    scan_record,
)


def test_body_crc_clears_the_top_bit_of_java_crc32() -> None:
    body = b"Hello RocketMQ"
    assert m.body_crc(body) == zlib.crc32(body) & 0x7FFFFFFF
    assert m.body_crc(b"") == 0
    # java.util.zip.CRC32 of b"a" is 3904355907 (top bit set); UtilAll.crc32 stores 1756872259.
    assert zlib.crc32(b"a") == 3904355907 and m.body_crc(b"a") == 1756872259


def test_properties_like_java() -> None:
    assert m.properties_to_string({"TAGS": "A", "KEYS": "k1 k2"}) == "TAGS\x01A\x02KEYS\x01k1 k2"
    # Go leaves a trailing separator; empty names and values are dropped; later duplicates win.
    parsed = m.string_to_properties("TAGS\x01A\x02\x01x\x02EMPTY\x01\x02K\x011\x02K\x012\x02")
    assert parsed == {"TAGS": "A", "K": "2"}
    assert m.string_to_properties(None) == {} and m.string_to_properties("") == {}


def java_string2message_properties(text: str) -> dict[str, str]:
    """MessageDecoder.string2messageProperties, step by step."""
    out = {}
    for item in text.split("\x02"):
        index = item.find("\x01")
        if 0 < index < len(item) - 1:
            out[item[:index]] = item[index + 1 :]
    return out


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["", "A", "KEYS", "a\x01b", "x y"]),
            st.text(alphabet="ab\x01 é", max_size=4),
        ),
        max_size=8,
    ),
    st.sampled_from(["", "\x02", "\x02\x02", "\x01"]),
)
def test_properties_parse_as_java_does_for_any_string(pairs, tail) -> None:
    text = "\x02".join(f"{name}\x01{value}" for name, value in pairs) + tail
    assert m.string_to_properties(text) == java_string2message_properties(text)


def test_offset_msg_id_round_trip_ipv4_and_ipv6() -> None:
    v4 = m.create_offset_msg_id(m.host_bytes("10.0.0.1"), 10911, 123456789)
    assert v4 == "0A00000100002A9F00000000075BCD15" and len(v4) == 32
    decoded = m.decode_offset_msg_id(v4)
    assert (decoded.addr, decoded.phys_offset) == ("10.0.0.1:10911", 123456789)
    v6 = m.create_offset_msg_id(m.host_bytes("fe80::1"), 10911, 7)
    assert len(v6) == 56 and m.decode_offset_msg_id(v6).phys_offset == 7
    with pytest.raises(ValueError):
        m.decode_offset_msg_id("ABC")


def _pack(
    body: bytes,
    topic: str,
    props: str,
    *,
    born: str = "127.0.0.1",
    store: str = "10.0.0.1",
    sys_flag: int = 0,
    pos: int = 0,
) -> tuple[bytearray, int]:
    born_address, store_address = m.host_bytes(born), m.host_bytes(store)
    topic_b, props_b = topic.encode(), props.encode()
    size = record_size(
        len(body),
        len(topic_b),
        len(props_b),
        born_v6=len(born_address) == 16,
        store_v6=len(store_address) == 16,
    )
    buffer = bytearray(pos + size + 16)
    pack_record_into(
        buffer,
        pos,
        total_size=size,
        body_crc=m.body_crc(body),
        queue_id=3,
        flag=7,
        queue_offset=42,
        phys_offset=4096,
        sys_flag=sys_flag,
        born_timestamp=1_700_000_000_000,
        born_address=born_address,
        born_port=5555,
        store_timestamp=1_700_000_000_123,
        store_address=store_address,
        store_port=10911,
        reconsume_times=2,
        prepared_transaction_offset=99,
        body=body,
        topic=topic_b,
        properties=props_b,
    )
    return buffer, size


def test_record_layout_is_javas_byte_for_byte() -> None:
    buffer, size = _pack(b"hi", "T", "TAGS\x01A")
    assert size == 91 + 2 + 1 + 6
    assert buffer[0:4] == size.to_bytes(4, "big")
    assert buffer[4:8] == bytes.fromhex("DAA320A7")
    assert buffer[20:28] == (42).to_bytes(8, "big")  # QUEUEOFFSET
    assert buffer[28:36] == (4096).to_bytes(8, "big")  # PHYSICALOFFSET
    assert buffer[48:52] == bytes([127, 0, 0, 1]) and buffer[52:56] == (5555).to_bytes(4, "big")
    assert buffer[64:68] == bytes([10, 0, 0, 1])
    assert buffer[84:88] == (2).to_bytes(4, "big") and buffer[88:90] == b"hi"
    assert buffer[90] == 1 and buffer[91:92] == b"T"
    assert buffer[92:94] == (6).to_bytes(2, "big") and buffer[94:100] == b"TAGS\x01A"


@pytest.mark.parametrize(
    ("born", "store"),
    [("127.0.0.1", "10.0.0.1"), ("::1", "10.0.0.1"), ("127.0.0.1", "fe80::2"), ("::1", "fe80::2")],
)
def test_decode_and_scan_every_host_combination(born: str, store: str) -> None:
    buffer, size = _pack(
        b"body-bytes", "TopicTest", "TAGS\x01TagA\x02KEYS\x01k1", born=born, store=store, pos=10
    )
    message = m.decode_message(buffer, 10)
    assert (message.topic, message.body, message.queue_id, message.flag) == (
        "TopicTest",
        b"body-bytes",
        3,
        7,
    )
    assert (message.queue_offset, message.commit_log_offset, message.reconsume_times) == (
        42,
        4096,
        2,
    )
    assert message.prepared_transaction_offset == 99 and message.store_size == size
    assert message.tags == "TagA" and message.keys == "k1"
    assert message.born_host.endswith(":5555") and message.store_host.endswith(":10911")
    assert bool(message.sys_flag & m.BORNHOST_V6_FLAG) == (":" in born)
    assert bool(message.sys_flag & m.STOREHOSTADDRESS_V6_FLAG) == (":" in store)
    scan = scan_record(memoryview(buffer), 10, check_crc=True)
    assert scan.kind is RecordKind.MESSAGE and scan.size == size
    assert (scan.topic, scan.queue_id, scan.queue_offset, scan.phys_offset) == (
        "TopicTest",
        3,
        42,
        4096,
    )
    assert scan.store_timestamp == 1_700_000_000_123


def test_compressed_bodies_are_inflated_for_consumers_only() -> None:
    raw = b"x" * 5000
    buffer, _ = _pack(zlib.compress(raw), "T", "", sys_flag=m.COMPRESSED_FLAG)
    assert m.decode_message(buffer).body == raw
    assert m.decode_message(buffer, decompress=False).body == zlib.compress(raw)


def test_scan_classifies_blank_zeros_and_garbage() -> None:
    blank = bytearray(64)
    pack_blank_into(blank, 0, 64)
    assert scan_record(memoryview(blank), 0) == RecordScan(RecordKind.BLANK, 64)
    assert scan_record(memoryview(bytearray(64)), 0).kind is RecordKind.END
    assert scan_record(memoryview(b"\x01" * 64), 0).kind is RecordKind.CORRUPT
    buffer, size = _pack(b"payload", "T", "")
    assert scan_record(memoryview(buffer[: size - 1]), 0).kind is RecordKind.CORRUPT  # torn
    flipped = bytearray(buffer)
    flipped[88] ^= 0xFF  # a body byte
    assert scan_record(memoryview(flipped), 0, check_crc=False).kind is RecordKind.MESSAGE
    assert scan_record(memoryview(flipped), 0, check_crc=True).reason == "body CRC mismatch"


def test_decode_refuses_garbage_with_one_error_type() -> None:
    for garbage in (b"", b"\x00" * 10, b"\xff" * 200, bytes(_pack(b"abc", "T", "")[0][:50])):
        with pytest.raises(m.MessageDecodeError):
            m.decode_message(garbage)


def test_batch_body_round_trip() -> None:
    entries = [
        (0, b"one", "TAGS\x01A\x02UNIQ_KEY\x01U1"),
        (5, b"", "UNIQ_KEY\x01U2"),
        (1, b"three", ""),
    ]
    decoded = m.decode_batch_body(m.encode_batch_body(entries))
    assert [(e.flag, bytes(e.body), e.properties) for e in decoded] == entries
    with pytest.raises(m.MessageDecodeError):
        m.decode_batch_body(m.encode_batch_body(entries)[:-3])


@given(
    body=st.binary(max_size=300),
    topic=st.text(alphabet="abcXYZ%|_-0123", min_size=1, max_size=127),
    props=st.dictionaries(
        st.text(alphabet="ABCKEYS_", min_size=1, max_size=8),
        st.text(min_size=1, max_size=20).filter(lambda v: "\x01" not in v and "\x02" not in v),
        max_size=5,
    ),
    flag=st.integers(-(2**31), 2**31 - 1),
)
def test_every_field_round_trips(body: bytes, topic: str, props: dict[str, str], flag: int) -> None:
    props_string = m.properties_to_string(props)
    buffer, size = _pack(body, topic, props_string)
    message = m.decode_message(buffer)
    assert (message.body, message.topic, message.properties) == (body, topic, props)
    assert scan_record(memoryview(buffer), 0, check_crc=True).size == size
