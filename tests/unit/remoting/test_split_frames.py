"""FrameDecoder with the C splitter (remoting/native/codec/frames.c) against its pure-Python
loop (next_frame, the reference): for any stream of frames, good and bad, fed in any chunks,
the same frames in the same order, then the same RemoteProtocolError (or the same bytes still
held)."""

from __future__ import annotations

import struct
import tracemalloc
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from remoting import frame as frame_module
from remoting.errors import RemoteProtocolError
from remoting.frame import FrameDecoder, encode_frame
from tests.kits.nativekit import needs_codec

good = st.builds(
    encode_frame, st.sampled_from([0, 1]), st.binary(max_size=40), st.binary(max_size=60)
)
bad = st.one_of(
    st.integers(-(2**31), 2**31 - 1).map(lambda n: struct.pack(">i", n)),  # any length
    st.builds(  # a serialize type past 1, or a header running past its frame
        lambda t, h, n: struct.pack(">iI", 4 + n, (t << 24) | min(h, 0xFFFFFF)) + b"x" * n,
        st.sampled_from([0, 1, 2, 255]),
        st.integers(0, 24) | st.integers(0, 0xFFFFFF),
        st.integers(0, 22),
    ),
    st.binary(max_size=12),
)
streams = st.lists(st.one_of(good, good, good, bad), max_size=12).map(b"".join)


def run(stream: bytes, cuts: list[int], max_frame: int) -> list[Any]:
    decoder, seen = FrameDecoder(max_frame), []
    points = sorted({c % (len(stream) + 1) for c in cuts} | {len(stream)})
    start = 0
    for end in points:
        decoder.receive_data(stream[start:end])
        start = end
        out: list = []
        try:
            decoder.take_frames(out)
        except RemoteProtocolError as exc:
            seen += [tuple(f) for f in out] + [("refused", str(exc))]
            return seen
        seen += [tuple(f) for f in out]
    return [*seen, ("held", decoder.buffered_bytes)]


@needs_codec
@given(
    stream=streams,
    cuts=st.lists(st.integers(0, 10**4), max_size=4),
    max_frame=st.sampled_from([16 * 1024 * 1024, 64, 4]),
)
@example(stream=encode_frame(0, b"h", b"b") * 3, cuts=[], max_frame=16 * 1024 * 1024)
@example(stream=encode_frame(0, b"h" * 70, b""), cuts=[], max_frame=64)
@example(stream=encode_frame(0, b"h" * 61, b""), cuts=[], max_frame=64)  # length 65
@example(stream=encode_frame(0, b"h" * 60, b""), cuts=[], max_frame=64)  # length 64
@example(stream=encode_frame(2, b"h", b"b"), cuts=[], max_frame=64)
@example(stream=struct.pack(">iI", 8, 5) + b"x" * 4, cuts=[], max_frame=64)  # header past
@example(stream=struct.pack(">iI", 8, 4) + b"x" * 4, cuts=[], max_frame=64)
def test_the_same_frames_and_refusals_as_the_python_loop(
    stream: bytes, cuts: list[int], max_frame: int
) -> None:
    fast = run(stream, cuts, max_frame)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(frame_module, "_split_frames", None)
        assert run(stream, cuts, max_frame) == fast


@needs_codec
def test_frames_are_frame_tuples() -> None:
    decoder = FrameDecoder()
    decoder.receive_data(encode_frame(0, b"{}", b"body") * 2)
    first, second = decoder.frames()
    assert type(first) is frame_module.Frame
    assert (first.serialize_type, first.header, first.body) == (0, b"{}", b"body") == second


@given(
    data=streams,
    held=st.binary(max_size=6),
    max_frame=st.sampled_from([16 * 1024 * 1024, 64, 4]),
)
@example(data=encode_frame(1, b"h" * 3, b"b" * 5), held=b"", max_frame=16 * 1024 * 1024)
@example(data=encode_frame(0, b"h" * 70, b""), held=b"", max_frame=64)
def test_a_read_of_one_whole_frame_is_that_frame_and_nothing_else_is(
    data: bytes, held: bytes, max_frame: int
) -> None:
    """``whole_frame`` (a lone request's read) gives a frame only where the decoder would
    have split exactly that one frame out of the read, leaving nothing held; else None, the
    decoder untouched."""
    decoder = FrameDecoder(max_frame)
    decoder.receive_data(held)
    reference: list[Any] = []
    if held:
        assert decoder.whole_frame(data) is None
        return
    got = decoder.whole_frame(data)
    assert decoder.buffered_bytes == 0
    decoder.receive_data(data)
    try:
        decoder.take_frames(reference)
    except RemoteProtocolError:
        reference = []
    if len(reference) == 1 and decoder.buffered_bytes == 0:
        assert got is not None and tuple(got) == tuple(reference[0])
    else:
        assert got is None


@needs_codec
@given(
    data=st.one_of(streams, good, bad),
    max_frame=st.sampled_from([16 * 1024 * 1024, 64, 4, 0]),
)
@example(data=struct.pack(">iI", 4, 0), max_frame=4)
@example(data=struct.pack(">iI", -8, 0), max_frame=16)
@example(data=struct.pack(">iI", 8, 0x01000004) + b"hhhh", max_frame=16)
def test_the_c_whole_frame_is_the_pythons(data: bytes, max_frame: int) -> None:
    """remoting/native/codec/frames.c's whole_frame against its reference on any read."""
    native = frame_module.native
    assert native is not None
    want = frame_module.whole_frame_reference(frame_module.Frame, data, max_frame)
    got = native.whole_frame(frame_module.Frame, data, max_frame)
    assert (None if got is None else tuple(got)) == (None if want is None else tuple(want))
    assert got is None or type(got) is frame_module.Frame


@needs_codec
def test_the_c_whole_frame_refuses_what_is_not_bytes() -> None:
    native = frame_module.native
    assert native is not None
    frame = encode_frame(0, b"h", b"b")
    for args in [
        (frame_module.Frame, bytearray(frame), 64),
        (dict, frame, 64),
        (frame_module.Frame, frame),
    ]:
        with pytest.raises(TypeError):
            native.whole_frame(*args)


def test_a_big_frame_is_not_held_once_split_while_lone_frames_follow() -> None:
    """A 4 MiB frame arrives in 64 KiB reads (held in a growing bytearray), then only lone
    frames, which never touch the buffer: the big frame's memory goes when it is split, not
    whenever a read next needs the buffer."""
    small = encode_frame(0, b"h" * 40, b"b" * 200)
    big = encode_frame(0, b"h" * 40, b"b" * (4 << 20))
    decoder = FrameDecoder()
    tracemalloc.start()
    try:
        out: list[Any] = []
        for start in range(0, len(big), 64 * 1024):
            decoder.receive_data(big[start : start + 64 * 1024])
            decoder.take_frames(out)
        assert len(out) == 1
        out.clear()
        for _ in range(3):
            assert decoder.whole_frame(small) is not None
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held < 1 << 20, f"{held} bytes still allocated"
