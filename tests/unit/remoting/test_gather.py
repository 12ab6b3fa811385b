"""A Gather body (a pull's stored records) leaves as its parts: the frame's buffers are the
header and the very slices given, never a joined copy."""

from __future__ import annotations

import mmap

from remoting.command import Gather, RemotingCommand, decode_command, encode_command
from remoting.frame import FrameDecoder


def test_a_gather_body_is_written_as_its_slices_and_reads_back_joined() -> None:
    mapped = mmap.mmap(-1, 4096)
    mapped[:12] = b"recordArecB!"
    view = memoryview(mapped)
    parts = [view[0:7], view[7:12]]
    request = RemotingCommand.request(11, {"topic": "T"})
    response = request.make_response(0, None, {"nextBeginOffset": "2"}, Gather(parts, 12))
    buffers = encode_command(response)
    assert buffers[1] is parts[0] and buffers[2] is parts[1]
    decoder = FrameDecoder()
    decoder.receive_data(b"".join(buffers))
    (frame,) = decoder.frames()
    decoded = decode_command(frame)
    assert bytes(decoded.body) == b"recordArecB!"
    assert decoded.opaque == request.opaque and decoded.ext_fields == {"nextBeginOffset": "2"}
    assert len(response.body) == 12 and bytes(response.body) == b"recordArecB!"
    del buffers, parts, response
    view.release()
    mapped.close()


def test_an_empty_gather_is_a_frame_without_body() -> None:
    response = RemotingCommand.request(11).make_response(0, None, None, Gather([], 0))
    (only,) = encode_command(response)
    decoder = FrameDecoder()
    decoder.receive_data(only)
    assert bytes(decode_command(decoder.frames()[0]).body) == b""
