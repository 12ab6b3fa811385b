"""Length-prefixed framing, sans-IO (docs/spec/remoting.md §2).

``frameLength(4) | serializeType<<24 | headerLength (4) | header | body``. The decoder never
touches a socket, a clock or a logger; garbage raises :class:`RemoteProtocolError` only.
"""

from __future__ import annotations

import struct
from typing import Any, NamedTuple

from remoting.codec_native import native
from remoting.errors import RemoteProtocolError

PREFIX = struct.Struct(">iI")  # frameLength, headerInfo (serializeType << 24 | headerLength)
MAX_FRAME_BYTES = 16 * 1024 * 1024  # Java's com.rocketmq.remoting.frameMaxLength default
_HEADER_LENGTH_MASK = 0x00FFFFFF
SMALL_REST = 64 * 1024


# FrameDecoder.take_commands' answers: what the Frames among its items need.
COMMANDS, DECLINED, FRAMES = 0, 1, 2


class Frame(NamedTuple):
    serialize_type: int
    header: bytes
    body: bytes


class FrameDecoder:
    """Bytes in, frames out.

    Complete frames are parsed straight out of one buffer with a moving read position. When the
    previous data was used up, the new chunk itself becomes the buffer (no copy), and frames
    are sliced out of it once. A partial frame of up to ``SMALL_REST`` bytes is carried over
    into one new bytes with the next chunk (pipelined requests end every 64 KiB read inside a
    frame; slicing frames out of bytes costs half what a bytearray's memoryview copies cost);
    a larger one into a bytearray that grows by appending (a 16 MiB frame arrives in hundreds
    of reads).
    """

    __slots__ = ("_buffer", "_pos", "empty", "max_frame_bytes")

    def __init__(self, max_frame_bytes: int = MAX_FRAME_BYTES) -> None:
        self._buffer: bytes | bytearray = b""
        self._pos = 0
        self.max_frame_bytes = max_frame_bytes
        # No bytes held: a read may be one whole frame as it is (``whole_command``). An
        # attribute, not a property: the selector's read of a ready connection asks it.
        self.empty = True

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        buffer, pos = self._buffer, self._pos
        rest = len(buffer) - pos
        if rest <= 0:
            self._buffer = data if type(data) is bytes else bytes(data)
        elif rest <= SMALL_REST:
            with memoryview(buffer) as view, view[pos:] as tail:
                self._buffer = b"".join((tail, data))
        elif type(buffer) is bytearray:
            if pos:
                del buffer[:pos]
            buffer += data
        else:
            self._buffer = bytearray(buffer[pos:]) + data
        self._pos = 0
        self.empty = not self._buffer

    @property
    def buffered_bytes(self) -> int:
        return len(self._buffer) - self._pos

    def clear(self) -> None:
        """Drop what is buffered: the connection is gone, and its partial frame with it."""
        self._buffer, self._pos = b"", 0
        self.empty = True

    def whole_frame(self, data: bytes) -> Frame | None:
        """``data`` as a frame when the decoder holds no buffer (``take_frames`` drops one it
        has used up) and it is exactly one complete frame that parses (a lone request's
        read): nothing is buffered for it. None: anything else, for ``receive_data`` and
        ``take_frames`` to judge, the decoder untouched."""
        if self._buffer:
            return None
        return _whole_frame(Frame, data, self.max_frame_bytes)

    def whole_command(self, data: bytes) -> Any:
        """``whole_frame``, a JSON frame's header scanned to its command in the same native
        call where the scan takes it (as ``take_commands`` does): that command, else the Frame
        the scan declined (``decode_declined``), or None. Pure mode: ``whole_frame``."""
        if self._buffer:
            return None
        return _whole_command(Frame, data, self.max_frame_bytes)

    def next_frame(self) -> Frame | None:
        """The next complete frame, or None when more bytes are needed."""
        buffer, pos = self._buffer, self._pos
        available = len(buffer) - pos
        if available < 8:
            if available >= 4:
                self._check_length(int.from_bytes(buffer[pos : pos + 4], "big", signed=True))
            return None
        length, mark = PREFIX.unpack_from(buffer, pos)
        if length < 4 or length > self.max_frame_bytes:
            self._check_length(length)
        if available < 4 + length:
            return None
        serialize_type, header_length = mark >> 24, mark & _HEADER_LENGTH_MASK
        if serialize_type > 1:
            raise RemoteProtocolError(f"unknown serialize type {serialize_type}")
        header_end = pos + 8 + header_length
        frame_end = pos + 4 + length
        if header_end > frame_end:
            raise RemoteProtocolError(
                f"header length {header_length} runs past the frame ({length - 4} bytes after "
                "the header info)"
            )
        self._pos = frame_end
        if type(buffer) is bytes:
            return Frame(serialize_type, buffer[pos + 8 : header_end], buffer[header_end:frame_end])
        with memoryview(buffer) as view:  # one copy per part, and no export left behind
            return Frame(
                serialize_type, bytes(view[pos + 8 : header_end]), bytes(view[header_end:frame_end])
            )

    def _check_length(self, length: int) -> None:
        if length < 4 or length > self.max_frame_bytes:
            raise RemoteProtocolError(
                f"frame length {length} out of range [4, {self.max_frame_bytes}]"
            )

    def frames(self) -> list[Frame]:
        """Every complete frame buffered now."""
        out: list[Frame] = []
        self.take_frames(out)
        return out

    def take_frames(self, out: list[Frame]) -> None:
        """Append every complete frame buffered now to ``out``. A frame that does not parse
        raises RemoteProtocolError, the frames before it appended."""
        buffer = self._buffer
        if _split_frames is not None and type(buffer) is bytes:
            # The plain complete frames in one C call; next_frame judges where it stopped.
            frames, self._pos = _split_frames(Frame, buffer, self._pos, self.max_frame_bytes)
            out += frames
        while (frame := self.next_frame()) is not None:
            out.append(frame)
        self._drop_used()

    def take_commands(self, out: list[Any]) -> int:
        """``take_frames``, with each JSON frame's header scanned to its command in the same
        native call where the scan takes it (remoting/command.py ``decode_command``'s fast
        path, whose result it is): ``out`` gets those commands and, for every other frame, its
        Frame. The answer says what the Frames need: ``COMMANDS`` none came, ``DECLINED`` the
        scan has declined their JSON headers already (``decode_declined``), ``FRAMES`` none was
        scanned (``decode_command``: pure mode, or a big frame's bytearray)."""
        buffer = self._buffer
        if _split_commands is None or type(buffer) is not bytes:
            start = len(out)
            self.take_frames(out)
            return COMMANDS if len(out) == start else FRAMES
        items, self._pos, frames = _split_commands(Frame, buffer, self._pos, self.max_frame_bytes)
        out += items
        # next_frame judges where the split stopped: it refuses or waits, as split_frames is
        # held to it; a frame it cut would only lose the scan's fast path (DECLINED parses).
        while (frame := self.next_frame()) is not None:
            out.append(frame)
            frames += 1
        self._drop_used()
        return DECLINED if frames else COMMANDS

    def _drop_used(self) -> None:
        if self._pos >= len(self._buffer):
            # Nothing held: the read (or a big frame's bytearray) goes now, not at the next
            # read, which may be a lone frame that never touches the buffer (whole_frame).
            self._buffer, self._pos = b"", 0
            self.empty = True


def whole_frame_reference(
    frame_type: type[Frame], data: bytes, max_frame_bytes: int
) -> Frame | None:
    """``FrameDecoder.whole_frame``'s judgement of the read itself (remoting/native/codec/
    frames.c has its twin): a frame only where ``take_frames`` would cut exactly that one."""
    size = len(data)
    if size < 8:
        return None
    length, mark = PREFIX.unpack_from(data)
    header_end = 8 + (mark & _HEADER_LENGTH_MASK)
    if length + 4 != size or length > max_frame_bytes or header_end > size or mark >> 24 > 1:
        return None
    return frame_type(mark >> 24, data[8:header_end], data[header_end:])


_split_frames = None if native is None else native.split_frames
_split_commands = None if native is None else native.split_commands
_whole_frame = whole_frame_reference if native is None else native.whole_frame
_whole_command = whole_frame_reference if native is None else native.whole_command


def frame_prefix(serialize_type: int, header_length: int, body_length: int) -> bytes:
    """The 8 bytes before the header: frame length and header info."""
    return PREFIX.pack(4 + header_length + body_length, (serialize_type << 24) | header_length)


def encode_frame(serialize_type: int, header: bytes, body: bytes = b"") -> bytes:
    return frame_prefix(serialize_type, len(header), len(body)) + header + body
