"""What one read of a connection brings (split out of remoting/reading.py): the read of a
ready socket with its judgement of a whole frame (``recv_command``, one C call), and the
commands a decoder holds complete (``take_commands``)."""

from __future__ import annotations

import socket
from typing import Any

from remoting.codec_native import native
from remoting.command import RemotingCommand, decode_command, decode_declined
from remoting.frame import (
    COMMANDS,
    DECLINED,
    FRAMES,
    Frame,
    FrameDecoder,
    whole_frame_reference,
)

# 64 KiB: recv(n) allocates n bytes first, and above ~128 KiB that allocation costs more than
# the read itself (recv(256 KiB) of a 200-byte request: 18 us; recv(64 KiB): 3 us).
READ_CHUNK = 64 * 1024


def recv_command_reference(
    sock: socket.socket, frame_type: type[Frame], max_frame_bytes: int, whole: bool
) -> Any:
    """What one read of a ready socket brought (remoting/native/codec/frames.c recv_command,
    its twin, does the read and the judgement in one call): b"" when nothing was there, None
    when the peer closed; else, when ``whole`` (the decoder holds nothing) and the read is
    exactly one complete frame, that frame (the C scans a JSON header to its command as
    ``FrameDecoder.whole_command`` does); else the bytes read. OSError as ``recv`` raises."""
    try:
        data = sock.recv(READ_CHUNK)
    except BlockingIOError:
        return b""
    if not data:
        return None
    if whole:
        frame = whole_frame_reference(frame_type, data, max_frame_bytes)
        if frame is not None:
            return frame
    return data


recv_command = recv_command_reference if native is None else native.recv_command


def take_commands(decoder: FrameDecoder, commands: list[RemotingCommand]) -> None:
    """Append every command the decoder holds complete (``FrameDecoder.take_commands``: the
    plain sends' and registered requests' scanned in its split, the other frames decoded
    here). A frame that does not parse raises RemoteProtocolError, the commands before it
    appended (they are still handled)."""
    kind = FRAMES  # what the Frames need when the split raised: decode_command judges all
    items: list[Any] = commands  # commands, and Frames until decoded in place below
    try:
        kind = decoder.take_commands(items)
    finally:
        if kind != COMMANDS:
            decode = decode_declined if kind == DECLINED else decode_command
            for i, item in enumerate(items):
                if type(item) is Frame:
                    try:
                        items[i] = decode(item)
                    except BaseException:
                        del items[i:]
                        raise
