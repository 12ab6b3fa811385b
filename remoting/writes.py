"""How a Connection's outgoing bytes leave: written by the event loop (LoopWrites) or by a
server's native sender thread (ThreadWrites). Stored message bytes are never copied.

Both count the bytes still queued, so the connection can stop reading a peer that does not
read its replies (``WRITE_HIGH_WATER``; ``drained`` is set again once they are written), and
both report a failed write through ``on_error``: the connection then closes. The connection's
socket is its only descriptor: ``release`` says who closes it.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import trio

from remoting.sender import OutboundSender

# Above this many queued outgoing bytes the reader stops reading until the writes catch up.
WRITE_HIGH_WATER = 32 * 1024 * 1024
_IOV_MAX = 1024

OnError = Callable[[str], None]


class LoopWrites:
    """Replies queued while a read batch is handled leave in one non-blocking ``sendmsg`` at
    its end (``flush``); only what the kernel cannot take at once goes to the writer task
    (``run``)."""

    def __init__(self, sock: socket.socket, on_error: OnError, on_io: Callable[[], None]) -> None:
        self._sock = sock
        self._on_error, self._on_io = on_error, on_io
        self._out: list[Any] = []
        self._ready = trio.Event()
        self._writing = False
        self._closed = False
        self.queued = 0
        self.drained = trio.Event()
        self.drained.set()

    def queue(self, buffers: list[Any]) -> None:
        self._out.extend(buffers)
        for buffer in buffers:
            self.queued += len(buffer)
        if self.queued > WRITE_HIGH_WATER and self.drained.is_set():
            self.drained = trio.Event()

    def reply(self, frame: bytes) -> None:
        """One reply frame, encoded, at the end of its read batch (``Connection.finish_lone``):
        queued and written at once."""
        self.queue((frame,))
        self.flush()

    def answer(self, buffers: list[Any]) -> bool:
        """A lone request's reply, outside a read batch: ``queue`` and ``flush``. False while
        reading is paused (too many bytes queued)."""
        self.queue(buffers)
        self.flush()
        return self.drained.is_set()

    def flush(self) -> bool:
        """Write what is queued if the kernel takes it; hand any rest to the writer task."""
        if not self._out or self._writing or self._closed:
            return True
        buffers, self._out = self._out, []
        try:
            rest = _send_nowait(self._sock, buffers)
        except OSError as exc:
            self._on_error(f"write failed: {exc!r}")
            return True
        self._on_io()
        if rest:
            self._out[:0] = rest
            self.queued = sum(len(b) for b in self._out)
            self._ready.set()
        else:
            self.queued = 0
            self.drained.set()
        return True

    async def run(self) -> None:
        """The writer task: finishes writes the kernel could not take at once."""
        while True:
            await self._ready.wait()
            self._ready = trio.Event()
            if self._closed:
                return
            self._writing = True
            try:
                while self._out:
                    buffers, self._out = self._out, []
                    await _send_all(self._sock, buffers)
                    self._on_io()
            except OSError as exc:
                self._on_error(f"write failed: {exc!r}")
                return
            finally:
                self._writing = False
            self.queued = 0
            self.drained.set()

    def close(self) -> None:
        """What is still queued is dropped."""
        self._closed = True
        self._out = []
        self.queued = 0
        self._ready.set()
        self.drained.set()

    def release(self, sock: socket.socket) -> bool:
        """False: the connection closes its socket itself."""
        return False


class ThreadWrites:
    """Replies go to the server's sender thread (remoting/sender.py); ``flush`` writes them
    at once only when no other connection is busy, else the next kick hands them over."""

    # What a lone request's reply reads and sets in C (remoting/native/codec/lone.c), at their
    # offsets; the rest are ordinary attributes.
    __slots__ = ("__dict__", "_closed", "_handle", "_sender", "paused", "queued")
    run = None  # no writer task: the thread writes

    def __init__(
        self,
        sender: OutboundSender,
        sock: socket.socket,
        on_error: OnError,
        on_io: Callable[[], None],
    ) -> None:
        self._sender = sender
        self._handle = sender.add(sock)  # the thread writes to the connection's descriptor
        self._on_error, self._on_io = on_error, on_io
        self._closed = False
        self.queued = 0
        self.drained = trio.Event()
        self.drained.set()
        # ``not drained.is_set()`` as an attribute, for a round's replies (``reply_round``):
        # set and cleared with ``drained``, which only this class replaces or sets.
        self.paused = False

    def queue(self, buffers: list[Any]) -> None:
        if self._send(buffers):
            self._on_io()

    def reply(self, frame: bytes) -> None:
        """``queue`` for one reply frame, encoded, at the end of its read batch in a selector
        round of several connections (``Connection.finish_lone``): the read that brought the
        request counted the connection's I/O, and the bytes leave at the round's flush (the
        selector's, or the kick before Trio's I/O wait), not by ``write_now``, which with
        other connections' replies in the same round leaves them to the kick anyway."""
        self._send((frame,))

    def answer(self, buffers: list[Any]) -> bool:
        """A lone request's reply, outside a read batch: ``queue`` and ``flush`` together (no
        ``_on_io``: the read that brought the request counted the connection's I/O, and the
        idle clock asks only whether the count moved). False while reading is paused; True
        when the connection is closed or closing (its reader finds out by itself)."""
        if not self._send(buffers):
            return True
        self._sender.write_now(self._handle)
        return not self.paused

    def _send(self, buffers: Any) -> bool:
        """Hand the buffers to the sender thread, pausing reading over the high-water mark;
        False when the connection is closed or the write failed (and it is closing)."""
        if self._closed:
            return False
        try:
            self.queued = self._sender.send(self._handle, buffers)
        except OSError as exc:
            self._on_error(f"write failed: {exc!r}")
            return False
        except RuntimeError:  # the server's sender stopped first: the server is going away
            self._on_error("server stopped")
            return False
        if self.queued > WRITE_HIGH_WATER and not self.paused:
            self._pause()
        return True

    def _sent(self, queued: int | Exception) -> None:
        """``_send``'s answer to the sender's, for ``reply_round``: the bytes queued now, or
        the exception of that connection's send (raised again unless it is one ``_send``
        takes)."""
        if type(queued) is not int:
            if isinstance(queued, OSError):
                self._on_error(f"write failed: {queued!r}")
            elif isinstance(queued, RuntimeError):
                self._on_error("server stopped")
            else:
                raise queued  # type: ignore[misc]
            return
        self.queued = queued
        if queued > WRITE_HIGH_WATER and not self.paused:
            self._pause()

    def _pause(self) -> None:
        """Over the high-water mark: reading pauses until the thread has written half down."""
        self.drained = trio.Event()
        self.paused = True
        if not self._sender.watch(self._handle, WRITE_HIGH_WATER // 2, self):
            self.on_drained()

    def on_drained(self) -> None:
        """The thread has written this connection's backlog down (or failed)."""
        if self._handle >= 0:
            self.queued = self._sender.pending(self._handle)
        self.paused = False
        self.drained.set()

    def flush(self) -> bool:
        """False when the bytes wait for the thread: the peer cannot have answered yet."""
        return self._closed or self._sender.write_now(self._handle)

    def close(self) -> None:
        """No more bytes; what is queued keeps leaving until ``release``."""
        self._closed = True
        self.paused = False
        self.drained.set()

    def release(self, sock: socket.socket) -> bool:
        """Hand the socket to the thread: it writes what the kernel takes at once, then closes
        it. False when the server's sender has stopped (the connection closes it itself)."""
        handle, self._handle = self._handle, -1
        if handle < 0 or not self._sender.remove(handle, sock.fileno()):
            return False
        sock.detach()  # the thread's now; closed by the thread, never here
        return True


def reply_round(writes: list[ThreadWrites], frames: list[bytes]) -> list[tuple[int, Exception]]:
    """``ThreadWrites.reply`` of ``frames[i]`` on ``writes[i]`` for each i (a round's
    connections, each once), handed to their sender in one call (``send_each``) when they
    share one (a server's connections do); each answer is then taken as ``reply`` takes it
    (``_sent``): the bytes queued, a pause over the high-water mark, a failed write closing
    that connection alone. Returns the indices whose reply raised, with the exception (a bug:
    the caller closes those connections), the others' replies queued all the same."""
    failed: list[tuple[int, Exception]] = []
    sender = writes[0]._sender if writes else None
    for w in writes:
        if w._closed or w._sender is not sender:
            break
    else:
        answers = sender.send_each([w._handle for w in writes], frames)  # type: ignore[union-attr]
        for index, (w, queued) in enumerate(zip(writes, answers, strict=True)):
            if type(queued) is int and queued <= WRITE_HIGH_WATER:
                w.queued = queued  # _sent's common case, without its call
                continue
            try:
                w._sent(queued)
            except Exception as exc:
                failed.append((index, exc))
        return failed
    for index, (w, frame) in enumerate(zip(writes, frames, strict=True)):
        try:
            w.reply(frame)
        except Exception as exc:
            failed.append((index, exc))
    return failed


def _send_nowait(sock: socket.socket, buffers: list[Any]) -> list[memoryview]:
    """Send without blocking; return what the kernel did not take."""
    views = [memoryview(b) for b in buffers if len(b)]
    while views:
        try:
            sent = sock.sendmsg(views[:_IOV_MAX])
        except BlockingIOError:
            return views
        _consume(views, sent)
    return views


def _consume(views: list[memoryview], sent: int) -> None:
    index = 0
    while index < len(views) and sent >= len(views[index]):
        sent -= len(views[index])
        index += 1
    del views[:index]
    if sent:
        views[0] = views[0][sent:]


async def _send_all(sock: socket.socket, buffers: list[Any]) -> None:
    views = [memoryview(b) for b in buffers if len(b)]
    while views:
        try:
            _consume(views, sock.sendmsg(views[:_IOV_MAX]))
        except BlockingIOError:
            await trio.lowlevel.wait_writable(sock)
        else:
            await trio.lowlevel.checkpoint()
