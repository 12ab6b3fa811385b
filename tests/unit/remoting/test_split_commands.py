"""A read's frames split and their JSON headers scanned in one C call (remoting/native/codec/
frames.c split_commands, through FrameDecoder.take_commands and remoting/reading.py
take_commands) against the path it replaces: take_frames, then decode_command per frame. For
any stream of frames (plain sends and pulls, their byte mutations, other codes, the RocketMQ
serialization, frames that do not split, headers that do not parse) cut into reads anywhere:
the same commands (class, fields, extFields, scanned values, header and body bytes) in the same
order, then the same RemoteProtocolError or the same bytes still held."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from remoting import frame as frame_module
from remoting.command import RemotingCommand, decode_command, encode_command_bytes
from remoting.errors import RemoteProtocolError
from remoting.frame import FrameDecoder, encode_frame
from remoting.receive import take_commands
from tests.kits.nativekit import needs_codec
from tests.unit.remoting import test_header_scan, test_send_scan
from tests.unit.remoting.test_send_scan import _edit, edits
from tests.unit.remoting.test_split_frames import bad

pytestmark = needs_codec

HEADERS = [*test_send_scan.BASES, *test_header_scan.BASES]
HEARTBEAT = encode_command_bytes(RemotingCommand.request(34, None, b'{"clientID":"c"}'))
ROCKETMQ_SEND = RemotingCommand.request(310, {"a": "G", "b": "T"}, b"body")
ROCKETMQ_SEND.serialize_type = 1

headers = st.one_of(
    st.sampled_from(HEADERS),
    st.builds(_edit, st.sampled_from(HEADERS), edits),
    st.binary(max_size=24),
)
json_frames = st.builds(lambda h, b: encode_frame(0, h, b), headers, st.binary(max_size=40))
frames = st.one_of(
    json_frames,
    json_frames,
    json_frames,
    st.sampled_from([HEARTBEAT, encode_command_bytes(ROCKETMQ_SEND)]),
    st.builds(encode_frame, st.just(1), st.binary(max_size=20), st.binary(max_size=20)),
    bad,
)
streams = st.lists(frames, max_size=8).map(b"".join)


def snapshot(command: RemotingCommand) -> tuple[Any, ...]:
    return (
        type(command).__name__,
        command.code,
        command.language,
        command.version,
        command.opaque,
        command.flag,
        command.remark,
        command.ext_fields,
        type(command.body),
        bytes(command.body),
        command.serialize_type,
        command.header_values,
        getattr(command, "header", None),
    )


def run(stream: bytes, cuts: list[int], max_frame: int) -> list[Any]:
    decoder, seen = FrameDecoder(max_frame), []
    points = sorted({c % (len(stream) + 1) for c in cuts} | {len(stream)})
    start = 0
    for end in points:
        decoder.receive_data(stream[start:end])
        start = end
        commands: list[RemotingCommand] = []
        try:
            take_commands(decoder, commands)
        except RemoteProtocolError as exc:
            return [*seen, *map(snapshot, commands), ("refused", str(exc))]
        seen += map(snapshot, commands)
    return [*seen, ("held", decoder.buffered_bytes)]


def reference(stream: bytes, cuts: list[int], max_frame: int) -> list[Any]:
    """Today's path: every frame split out as a Frame, decoded by decode_command."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(frame_module, "_split_commands", None)
        return run(stream, cuts, max_frame)


@given(
    stream=streams,
    cuts=st.lists(st.integers(0, 10**4), max_size=4),
    max_frame=st.sampled_from([16 * 1024 * 1024, 16 * 1024 * 1024, 512, 64]),
)
@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
@example(stream=encode_frame(0, HEADERS[0], b"b") * 3, cuts=[], max_frame=16 << 20)
@example(  # a header that does not parse between two sends: the first handled, then refused
    stream=encode_frame(0, HEADERS[0], b"1") + encode_frame(0, b"{", b"") + HEARTBEAT,
    cuts=[],
    max_frame=16 << 20,
)
@example(  # a send, then a frame that does not split
    stream=encode_frame(0, HEADERS[1], b"1") + struct.pack(">iI", 8, 5) + b"x" * 4,
    cuts=[],
    max_frame=16 << 20,
)
@example(stream=encode_frame(0, HEADERS[0], b"b" * 600), cuts=[], max_frame=512)  # too long
@example(stream=encode_frame(0, HEADERS[-1], b"") * 2, cuts=[30, 500], max_frame=16 << 20)
def test_the_same_commands_and_refusals_as_split_then_decode(
    stream: bytes, cuts: list[int], max_frame: int
) -> None:
    assert run(stream, cuts, max_frame) == reference(stream, cuts, max_frame)


def test_plain_sends_and_pulls_come_out_scanned_with_their_own_bytes() -> None:
    """The fast path is taken (not only agreed with): ScannedCommands whose header and body are
    bytes of their own, not views of the read (a view would pin the whole read)."""
    read = b"".join(encode_frame(0, h, b"body%d" % i) for i, h in enumerate(HEADERS))
    decoder = FrameDecoder()
    decoder.receive_data(read)
    items: list[Any] = []
    assert decoder.take_commands(items) == frame_module.COMMANDS
    assert [type(item).__name__ for item in items] == ["ScannedCommand"] * len(HEADERS)
    for index, (item, header) in enumerate(zip(items, HEADERS, strict=True)):
        assert type(item.header) is bytes and item.header == header
        assert type(item.body) is bytes and item.body == b"body%d" % index
    assert decoder.buffered_bytes == 0


def test_other_frames_are_handed_back_as_frames() -> None:
    decoder = FrameDecoder()
    decoder.receive_data(encode_frame(0, HEADERS[0], b"") + HEARTBEAT)
    items: list[Any] = []
    assert decoder.take_commands(items) == frame_module.DECLINED
    assert [type(item).__name__ for item in items] == ["ScannedCommand", "Frame"]


def test_the_c_split_refuses_what_it_cannot_split() -> None:
    native = frame_module.native
    assert native is not None
    read = encode_frame(0, HEADERS[0], b"b")
    for args in [
        (frame_module.Frame, bytearray(read), 0, 64),
        (dict, read, 0, 64),
        (frame_module.Frame, read, 0),
    ]:
        with pytest.raises(TypeError):
            native.split_commands(*args)
    for args in [
        (frame_module.Frame, bytearray(read), 64),
        (dict, read, 64),
        (frame_module.Frame, read),
    ]:
        with pytest.raises(TypeError):
            native.whole_command(*args)
    with pytest.raises(ValueError):
        native.split_commands(frame_module.Frame, read, len(read) + 1, 1 << 24)


def _decoded(item: Any) -> Any:
    if item is None or type(item) is not frame_module.Frame:
        return item if item is None else snapshot(item)
    try:
        return snapshot(decode_command(item))
    except RemoteProtocolError as exc:
        return ("refused", str(exc))


@given(data=st.one_of(streams, frames), max_frame=st.sampled_from([16 << 20, 512, 64]))
@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
@example(data=encode_frame(0, HEADERS[0], b"b"), max_frame=16 << 20)
@example(data=encode_frame(0, b"{", b"b"), max_frame=16 << 20)
@example(data=HEARTBEAT, max_frame=16 << 20)
def test_a_lone_reads_command_is_its_frames(data: bytes, max_frame: int) -> None:
    """``whole_command`` (a lone request's read): None where ``whole_frame`` is None, else the
    command ``decode_command`` makes of that frame (scanned, or the Frame handed back)."""
    decoder = FrameDecoder(max_frame)
    want = frame_module.whole_frame_reference(frame_module.Frame, data, max_frame)
    got = decoder.whole_command(data)
    assert _decoded(got) == _decoded(want)
    if want is not None and want.serialize_type == 0 and want.header in HEADERS:
        assert type(got).__name__ == "ScannedCommand"
    assert decoder.buffered_bytes == 0
