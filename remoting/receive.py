"""What one read of a connection brings (split out of remoting/reading.py): the read of a
ready socket with its judgement of a whole frame (``recv_command``, one C call), a selector
round's reads of its plain connections (``recv_round``, one C call), and the commands a
decoder holds complete (``take_commands``)."""

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


def recv_round_reference(
    events: list[tuple[int, int]],
    connections: dict[int, Any],
    plain: dict[int, tuple[Any, Any, int]],
    frame_type: type[Frame],
) -> tuple[list[Any], list[Any], list[tuple[Any, Any]]]:
    """A selector round's reads (remoting/native/codec/round.c recv_round, its twin, says why):
    ``events`` the epoll's (fd, mask) pairs, ``connections`` the selector's connections by
    descriptor (an fd not there is skipped), ``plain`` those it may read here, each as
    (connection, decoder, max_frame_bytes) (``ReadBatches.round_entry``). A plain connection
    that is open and whose decoder holds nothing is read (``recv_command``); when the read is
    one whole frame scanned to a request, the connection's I/O is counted, its read batch
    begun, and it goes to ``owners`` with the request in ``staged``. Every other connection
    goes to ``rest`` as (connection, what its read brought), or (connection, Ellipsis) when it
    was not read; a failed read or bookkeeping brings its exception. The events are checked
    before any read: TypeError or ValueError, nothing read."""
    if (
        type(events) is not list
        or type(connections) is not dict
        or type(plain) is not dict
        or not (isinstance(frame_type, type) and issubclass(frame_type, tuple))
    ):
        raise TypeError("recv_round(events, connections, plain, frame_type)")
    events = tuple(events)  # type: ignore[assignment]  # what a connection's code may not change
    for event in events:
        if not isinstance(event, tuple) or not event or not isinstance(event[0], int):
            raise TypeError("recv_round: events are (fd, mask) tuples")
        if not -1 <= event[0] <= _INT_MAX:
            raise ValueError("recv_round: a descriptor out of range")
    owners: list[Any] = []
    staged: list[Any] = []
    rest: list[tuple[Any, Any]] = []
    for event in events:
        fd = event[0]
        connection = connections.get(fd)
        if connection is None:
            continue
        entry = plain.get(fd)
        if type(entry) is not tuple or len(entry) != 3 or entry[0] is not connection or fd < 0:
            rest.append((connection, ...))
            continue
        took, got = _read_plain(connection, entry, fd, frame_type)
        if took:
            owners.append(connection)
            staged.append(got)
        else:
            rest.append((connection, got))
    return owners, staged, rest


_INT_MAX = 2**31 - 1
_INT64 = 2**63


def _read_plain(
    connection: Any, entry: tuple[Any, Any, int], fd: int, frame_type: type
) -> tuple[bool, Any]:
    """``recv_round_reference``'s read of one plain connection: (True, the staged request), or
    (False, what goes to ``rest`` with it)."""
    max_frame = entry[2]
    if not isinstance(max_frame, int) or not -_INT64 <= max_frame < _INT64:
        return False, ...
    if not (_attr_is(connection, "closed", False) and _attr_is(entry[1], "empty", True)):
        return False, ...
    try:
        got = recv_command_reference(_Descriptor(fd), frame_type, max_frame, True)  # type: ignore[arg-type]
    except Exception as exc:
        return False, exc
    if type(got) is bytes or got is None or isinstance(got, frame_type):
        return False, got
    try:
        flag = got.flag
        if not isinstance(flag, int) or flag & 1:
            return False, got
        connection._ios += 1
        connection._in_read_batch = True
    except Exception as exc:
        return False, exc
    return True, got


def _attr_is(obj: Any, name: str, want: bool) -> bool:
    try:
        return getattr(obj, name) is want
    except Exception:
        return False


class _Descriptor:
    """A descriptor read as the C reads it: recv with MSG_DONTWAIT, whatever its mode; a
    closed one raises OSError (EBADF)."""

    __slots__ = ("_fd",)

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def fileno(self) -> int:
        return self._fd

    def recv(self, size: int) -> bytes:
        sock = socket.socket(fileno=self._fd)
        try:
            return sock.recv(size, socket.MSG_DONTWAIT)
        finally:
            sock.detach()  # the connection's descriptor, never closed here


recv_round = recv_round_reference if native is None else native.recv_round


def answer_lone_reference(entry: tuple[Any, Any, int], fd: int, kinds: tuple[Any, ...]) -> Any:
    """A lone request's read, handler call and reply (remoting/native/codec/lone.c
    answer_lone, its twin, says why): ``entry`` the selector's (connection, decoder,
    max_frame_bytes) for descriptor ``fd``, ``kinds`` (Frame, EncodedReply, ThreadWrites,
    WRITE_HIGH_WATER). An open connection whose decoder holds nothing is read
    (``recv_command``); a read that is one whole frame scanned to a request wanting an answer
    begins a read batch and goes to the connection's request handler; an EncodedReply on a
    still open connection ends the batch and is written (the sender's ``send`` and
    ``write_now`` for ThreadWrites, else the writes' ``answer``): True, or the connection's
    ``_keep_reading()`` when it pauses or its in-flight table is full. Anything else comes
    back for ``ReadBatches.lone_rest``: Ellipsis (nothing read), (what the read brought,) or
    (command, result, None) / (command, None, the exception the handler raised)."""
    connection, decoder, max_frame = entry
    frame_type, reply_type, thread_writes, high_water = kinds
    if connection.closed is not False or decoder.empty is not True:
        return ...
    try:
        got = recv_command(_Descriptor(fd), frame_type, max_frame, True)
    except OSError as exc:
        return (exc,)
    if type(got) is bytes or got is None or isinstance(got, frame_type):
        return (got,)
    flag = got.flag
    handler = connection.request_handler
    if type(flag) is not int or flag & 3 or handler is None:
        return (got,)
    connection._ios += 1
    connection._in_read_batch = True
    try:
        result = handler(connection, got)
    except Exception as exc:
        return (got, None, exc)
    except BaseException:
        connection._in_read_batch = False
        if connection.closed is False:
            connection._writes.flush()
        raise
    if type(result) is not reply_type or connection.closed is not False:
        return (got, result, None)
    connection._in_read_batch = False
    writes = connection._writes
    if type(writes) is thread_writes and writes._closed is False:
        going = _thread_answer(writes, result.buffers, high_water)
    else:
        going = writes.answer(result.buffers)
    if going and connection._in_flight.full is False:
        return True
    return connection._keep_reading()


def _thread_answer(writes: Any, buffers: Any, high_water: int) -> bool:
    """ThreadWrites.answer, as answer_lone does it: whether reading goes on."""
    sender, handle = writes._sender, writes._handle
    try:
        queued = sender.send(handle, buffers)
    except (OSError, RuntimeError) as exc:
        writes._sent(exc)  # the write failed or the sender stopped: the connection closes
        return True
    writes.queued = queued
    if queued > high_water and writes.paused is not True:
        writes._pause()
    sender.write_now(handle)
    return writes.paused is False


answer_lone = answer_lone_reference if native is None else native.answer_lone


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
