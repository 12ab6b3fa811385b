"""TlsConnection: a Connection over Trio's SSLStream (remoting/tls.py decides who gets one).

Everything above the bytes is Connection's: frames, dispatch, pending calls, the limits on
requests in flight and partial frames, the idle watchdog. What differs is how bytes move, since
the server's fast paths work on the raw descriptor and cannot carry TLS:

* a reader task per connection awaits ``receive_some`` (the server's ReadSelector never sees
  the connection);
* replies are queued as for a plain connection and written by the connection's writer task
  through ``send_all`` (never by the sender thread), the replies of one read in one TLS write;
* closing sends TLS's close_notify when the peer takes it at once, then closes the socket.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import trio

from remoting.connection import READ_CHUNK, Connection, format_addr
from remoting.sender import OutboundSender
from remoting.tls import close_quietly
from remoting.writes import WRITE_HIGH_WATER

SecureStream = trio.SSLStream[trio.SocketStream]


class TlsConnection(Connection):
    secure = True

    def _take_stream(self, stream: SecureStream) -> None:  # type: ignore[override]
        sock = stream.transport_stream.socket
        self.peer = format_addr(sock.getpeername())
        self.local = format_addr(sock.getsockname())
        self._stream = stream
        self._stream_closed = trio.Event()
        self._fd = sock.fileno()

    def _make_writes(self, sender: OutboundSender | None) -> StreamWrites:  # type: ignore[override]
        assert sender is None, "the sender thread writes to descriptors: no TLS there"
        return StreamWrites(self._stream, self.close_soon, self._touch)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        try:
            await super().run(task_status=task_status)
        finally:
            await close_quietly(self._stream)
            self._stream_closed.set()

    async def aclose(self, reason: str = "closed locally") -> None:
        running = self._nursery is not None
        await super().aclose(reason)
        if running:  # run() closes the stream: one close at a time on an SSLStream
            with trio.CancelScope(shield=True):
                await self._stream_closed.wait()
        else:
            await close_quietly(self._stream)

    def _release_socket(self) -> None:
        """The SSLStream owns the socket: run() and aclose() close it (close_notify first)."""

    async def _reader(self) -> None:
        receive = self._stream.receive_some
        while not self.closed:
            if self._reading_paused():
                await self._until_reading_resumes()
                continue
            try:
                data = await receive(READ_CHUNK)
            except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                self._mark_closed(f"read failed: {exc.__cause__ or exc!r}")
                return
            if not data:
                self._mark_closed("peer closed the connection")
                return
            if self._received(data) is None:
                return


class StreamWrites:
    """A TLS connection's outgoing bytes: queued as LoopWrites queues them, written by the
    writer task (``run``) as one ``send_all`` per batch. ``drained`` is cleared above
    ``WRITE_HIGH_WATER`` queued bytes, so a peer that does not read stops being read."""

    def __init__(
        self, stream: SecureStream, on_error: Callable[[str], None], on_io: Callable[[], None]
    ) -> None:
        self._stream = stream
        self._on_error, self._on_io = on_error, on_io
        self._out: list[Any] = []
        self._ready = trio.Event()
        self._closed = False
        self.queued = 0
        self.drained = trio.Event()
        self.drained.set()

    def queue(self, buffers: list[Any]) -> None:
        if self._closed:
            return
        self._out.extend(buffers)
        for buffer in buffers:
            self.queued += len(buffer)
        if self.queued > WRITE_HIGH_WATER and self.drained.is_set():
            self.drained = trio.Event()

    def flush(self) -> bool:
        """Wake the writer; the reader's next read cannot wait for it, so always True."""
        if self._out:
            self._ready.set()
        return True

    async def run(self) -> None:
        while True:
            await self._ready.wait()
            self._ready = trio.Event()
            while self._out and not self._closed:
                # One copy, before the await: the buffers may be slices of mapped store files.
                data, self._out = b"".join(self._out), []
                try:
                    await self._stream.send_all(data)
                except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                    self._on_error(f"write failed: {exc.__cause__ or exc!r}")
                    return
                self._on_io()
                self.queued -= len(data)
            if self._closed:
                return
            self.queued = 0
            self.drained.set()

    def close(self) -> None:
        """What is still queued is dropped."""
        self._closed = True
        self._out = []
        self.queued = 0
        self._ready.set()
        self.drained.set()

    def release(self, sock: object) -> bool:
        return False
