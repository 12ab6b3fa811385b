"""The HA byte protocol: reports and chunks survive any cut of the byte stream."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.ha.protocol import (
    HELLO,
    HELLO_MARK,
    ChunkDecoder,
    Hello,
    ProtocolError,
    ReportDecoder,
    encode_chunk_header,
    encode_hello,
    encode_report,
)


def cut(data: bytes, points: list[int]) -> list[bytes]:
    marks = sorted({p % (len(data) + 1) for p in points} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(marks)]


def test_report_is_a_big_endian_int64() -> None:
    assert encode_report(0x0102030405060708) == bytes(range(1, 9))


@given(
    st.lists(st.integers(min_value=0, max_value=2**62), min_size=1, max_size=20),
    st.lists(st.integers(min_value=0)),
)
def test_reports_decode_in_order_across_any_cut(offsets: list[int], points: list[int]) -> None:
    stream = b"".join(encode_report(o) for o in offsets)
    decoder = ReportDecoder()
    seen = [value for piece in cut(stream, points) for value in decoder.feed(piece)]
    assert seen == offsets


def test_negative_report_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError):
        ReportDecoder().feed(encode_report(-1))


@given(
    st.lists(st.tuples(st.integers(0, 2**40), st.binary(max_size=300)), min_size=1, max_size=10),
    st.lists(st.integers(min_value=0)),
)
def test_chunks_reassemble_across_any_cut(
    chunks: list[tuple[int, bytes]], points: list[int]
) -> None:
    stream = b"".join(encode_chunk_header(o, len(b)) + b for o, b in chunks)
    decoder = ChunkDecoder(max_body=1024)
    seen = [(c.offset, c.body) for piece in cut(stream, points) for c in decoder.feed(piece)]
    assert seen == chunks


def test_heartbeat_chunk_has_an_empty_body() -> None:
    [chunk] = ChunkDecoder(max_body=16).feed(encode_chunk_header(4096, 0))
    assert (chunk.offset, chunk.body) == (4096, b"")


def test_oversized_chunk_is_refused_before_buffering_it() -> None:
    with pytest.raises(ProtocolError, match="bad chunk header"):
        ChunkDecoder(max_body=16).feed(encode_chunk_header(0, 17))


@given(st.integers(0, 28))
def test_a_hello_comes_first_and_reports_follow_across_any_cut(point: int) -> None:
    data = encode_hello(7, 3) + encode_report(100) + encode_report(200)
    decoder = ReportDecoder()
    offsets = decoder.feed(data[:point]) + decoder.feed(data[point:])
    assert decoder.hello == Hello(7, 3)
    assert offsets == [100, 200]


def test_without_a_hello_reports_decode_as_before_and_a_bad_hello_is_refused() -> None:
    decoder = ReportDecoder()
    assert decoder.feed(encode_report(5)) == [5] and decoder.hello is None
    with pytest.raises(ProtocolError):
        ReportDecoder().feed(HELLO.pack(HELLO_MARK, 0, 3))
    later = ReportDecoder()
    later.feed(encode_report(5))
    with pytest.raises(ProtocolError):  # only the first thing sent may be a hello
        later.feed(encode_hello(7, 3))
