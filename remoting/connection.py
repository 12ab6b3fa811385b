"""Connection: one TCP stream, either side of it (docs/STYLE.md §3, §6; docs/spec/remoting.md §1).

Requests and responses travel both ways on every connection (a broker sends requests to its
clients over their own sockets), so client and server share this class:

* the reader parses every complete frame of each read, matches responses to pending calls by
  ``opaque``, and hands requests to the request handler. A server's connections are read by
  its ``ReadSelector`` (remoting/selector.py), one task for all; others have a reader task
  (the reading side: remoting/reading.py);
* a handler that answers at once (returns a command) is answered inline: no task, no channel;
  one that returns an awaitable gets its own task;
* the requests of one read go to the ``group_handler`` together (a server's: runs of pipelined
  sends are stored in one pass, remoting/server.py), each still answered on its own, in order;
  so do those of every connection a selector round found ready (remoting/selector.py);
* reading pauses (the peer's TCP window fills) while too many reply bytes are queued, or too
  many requests or request bytes are in flight (remoting/in_flight.py): a client that never
  reads its replies, or pipelines without end, cannot grow the server's memory;
* a server's connections report their partial frames to one ``PartialFrameBudget``; over it,
  the connection whose frame has waited longest is closed (remoting/budget.py says why);
* replies are written by the event loop, or on a server with an ``OutboundSender`` by its
  native thread (remoting/writes.py);
* the connection closes after ``idle_timeout_s`` without a byte in either direction.
"""

from __future__ import annotations

import logging
import math
import socket
from typing import Any

import trio

from remoting.budget import PartialFrameBudget
from remoting.calls import PendingCalls
from remoting.command import EncodedReply, RemotingCommand, encode_command
from remoting.errors import RemotingConnectError
from remoting.frame import MAX_FRAME_BYTES, FrameDecoder
from remoting.handling import GroupHandler, RequestHandler, RequestHandling
from remoting.handling import (
    HandlerResult as HandlerResult,  # importers of HandlerResult use this module
)
from remoting.in_flight import MAX_HANDLER_TASKS, MAX_IN_FLIGHT_BYTES, InFlight
from remoting.log_limit import log_limited, peer_warnings
from remoting.reading import READ_CHUNK as READ_CHUNK  # the server's budget floor uses it
from remoting.reading import ReadBatches
from remoting.selector import ReadSelector
from remoting.sender import OutboundSender
from remoting.writes import LoopWrites, ThreadWrites

log = logging.getLogger(__name__)

IDLE_TIMEOUT_S = 120.0


class Connection(ReadBatches, RequestHandling):
    # What a lone request's C reads and sets on its connection (remoting/native/codec/lone.c
    # answer_lone, round.c begin_batch; the broker's lone-send front reads born_host), at
    # their offsets (remoting/native/slots.h), where each was a lookup in the type's MRO and
    # then the instance's dict; the rest are ordinary attributes.
    __slots__ = (
        "_in_flight",
        "_in_read_batch",
        "_ios",
        "_writes",
        "born_host",
        "closed",
        "request_handler",
    )
    secure = False  # TLS (remoting/tls_connection.py)
    # The peer as a stored record's born host (address bytes, port), kept by the broker's
    # first send (broker/processor/send_plain.py born_host): an attribute, so that a round of
    # sends reads every connection's in one C-level map instead of a Python loop.
    born_host: tuple[bytes, int] | None

    def __init__(
        self,
        stream: trio.SocketStream,
        request_handler: RequestHandler | None = None,
        *,
        max_frame_bytes: int = MAX_FRAME_BYTES,
        idle_timeout_s: float = IDLE_TIMEOUT_S,
        max_handler_tasks: int = MAX_HANDLER_TASKS,
        max_in_flight_bytes: int = MAX_IN_FLIGHT_BYTES,
        sender: OutboundSender | None = None,
        selector: ReadSelector | None = None,
        budget: PartialFrameBudget | None = None,
        group_handler: GroupHandler | None = None,
    ) -> None:
        self.request_handler = request_handler
        self.group_handler = group_handler
        self.born_host = None
        self._take_stream(stream)
        self.closed = False
        self.close_reason: str | None = None
        self.attributes: dict[str, Any] = {}  # owners' per-connection state (client id, ...)
        self._decoder = FrameDecoder(max_frame_bytes)
        self._idle_timeout_s = idle_timeout_s
        self._calls = PendingCalls()
        self._in_flight = InFlight(max_handler_tasks, max_in_flight_bytes)
        self._budget = budget
        self._held = 0  # bytes of a partial frame, as last told to the budget
        self._nursery: trio.Nursery | None = None
        # The idle clock: reads and writes count themselves (``_ios``), and the watchdog turns
        # a moved count into a time; reads that report a partial frame time themselves.
        self._last_io = trio.current_time()
        self._ios = 0
        self._in_read_batch = False
        self._finished = trio.Event()
        self._writes = self._make_writes(sender)
        self._selector = selector
        self._read_done = trio.Event()

    # A TlsConnection (remoting/tls_connection.py) overrides the four methods that touch the
    # socket: _take_stream, _make_writes, _reader and _release_socket.

    def _take_stream(self, stream: trio.SocketStream) -> None:
        self.peer = format_addr(stream.socket.getpeername())
        self.local = format_addr(stream.socket.getsockname())
        # One descriptor per connection: the stream's socket is taken over as a plain one,
        # read and written from plain ``def`` code (the selector's reads, replies the kernel
        # takes at once) and waited on through trio.lowlevel. It is released in one place
        # (_release_socket), once nothing waits on it.
        trio_sock = stream.socket
        self._sock = socket.socket(
            trio_sock.family, trio_sock.type, trio_sock.proto, trio_sock.detach()
        )
        self._sock.setblocking(False)
        self._fd = self._sock.fileno()

    def _make_writes(self, sender: OutboundSender | None) -> LoopWrites | ThreadWrites:
        if sender is not None:
            return ThreadWrites(sender, self._sock, self.close_soon, self._touch)
        return LoopWrites(self._sock, self.close_soon, self._touch)

    def __repr__(self) -> str:
        return f"<Connection {self.local} <-> {self.peer}{' closed' if self.closed else ''}>"

    # ----------------------------------------------------------------------- lifecycle

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve the connection until the peer closes it, it idles out, or it is closed."""
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                if self._writes.run is not None:
                    nursery.start_soon(self._writes.run)
                nursery.start_soon(self._idle_watchdog)
                task_status.started()
                if self._selector is not None:
                    self._selector.add(self)
                    await self._read_done.wait()
                else:
                    await self._reader()
                nursery.cancel_scope.cancel()
        finally:
            if self._selector is not None:
                self._selector.remove(self)
            self._mark_closed(self.close_reason or "connection finished")
            try:
                self._release_socket()
            finally:
                self._finished.set()

    async def aclose(self, reason: str = "closed locally") -> None:
        self._mark_closed(reason)
        if self._nursery is not None:
            self._nursery.cancel_scope.cancel()
            await self._finished.wait()
        else:
            self._release_socket()
            await trio.lowlevel.checkpoint()

    def _release_socket(self) -> None:
        """Nothing waits on the socket any more: close it, or with a sender hand it to the
        thread, which closes it after writing what the kernel takes. Its number is free for
        the next connection only then, so the thread never writes into someone else's."""
        if self._sock.fileno() < 0:
            return
        trio.lowlevel.notify_closing(self._sock)
        if not self._writes.release(self._sock):
            self._sock.close()

    def _touch(self) -> None:
        self._ios += 1

    def close_soon(self, reason: str) -> None:
        """Close without waiting (from plain ``def`` code)."""
        self._mark_closed(reason)
        if self._nursery is not None:
            self._nursery.cancel_scope.cancel()

    def _mark_closed(self, reason: str) -> None:
        if self.closed:
            return
        self.closed = True
        self.close_reason = reason
        self._calls.fail_all(RemotingConnectError(f"connection to {self.peer} closed: {reason}"))
        # A connection is freed only when the cycle collector finds it: its partial frame (up
        # to 16 MiB) goes now, not then.
        self._decoder.clear()
        if self._held:
            self._release_partial()
        self._writes.close()  # the sender's thread still writes what the kernel takes at once
        self._read_done.set()

    async def _idle_watchdog(self) -> None:
        # A count per read/write and a coarse check here: moving a cancel scope's deadline on
        # every read costs more than the rest of a small request, and reading the clock on
        # every one (trio.current_time, twice per request) cost 0.3 us of a lone request's
        # ~5 us in the remoting layer. A count that moved since the last check dates the last
        # I/O to this check, so the close comes at most two steps late, never early.
        timeout = self._idle_timeout_s
        step = max(timeout / 16, 0.01)
        seen = self._ios
        while not self.closed:
            await trio.sleep(step)
            now = trio.current_time()
            if self._ios != seen:
                seen = self._ios
                self._last_io = now
            elif now - self._last_io > timeout:
                self.close_soon(f"idle for {timeout:g} s")
                return

    # ----------------------------------------------------------------------- reading

    async def _reader(self) -> None:
        # Reads from the raw socket. After a read that found data the next one is tried after
        # a plain checkpoint (eager); after a miss, after a readiness wait. Either way the
        # await is the checkpoint that keeps a busy peer from starving others.
        sock = self._sock
        wait_readable, checkpoint = trio.lowlevel.wait_readable, trio.lowlevel.checkpoint
        eager = False
        while not self.closed:
            if self._reading_paused():
                await self._until_reading_resumes()
                continue
            if eager:
                # A busy server: by the time the other connections had their turn, this
                # peer's next request is usually in, and reading it without a readiness wait
                # saves an epoll_ctl and a wake-up. A miss falls back to waiting.
                await checkpoint()
            else:
                await wait_readable(sock)
            eager = self._read_once()
            if eager is None:
                return

    def fileno(self) -> int:
        return self._fd

    def warn_peer(self, message: str, *args: Any) -> None:
        """A WARNING about this peer, a few per host and minute (remoting/log_limit.py)."""
        host = self.peer.rpartition(":")[0]
        log_limited(log, peer_warnings, host, logging.WARNING, message, *args)

    # ----------------------------------------------------------------------- writing

    def send_nowait(self, command: RemotingCommand | EncodedReply) -> None:
        """Queue a command. Never blocks, never raises for a closed peer.

        Inside a read batch the bytes wait for the batch's end, so the replies to one read go
        out in one system call; anywhere else they are flushed at once.
        """
        if self.closed:
            log.debug(
                "dropping a command for a closed connection: peer=%s code=%d",
                self.peer,
                command.code,
            )
            return
        if type(command) is EncodedReply:
            self._writes.queue(command.buffers)
        else:
            self._writes.queue(encode_command(command))
        if not self._in_read_batch and not self.closed:
            self._writes.flush()

    def send_many_nowait(self, commands: list[RemotingCommand | EncodedReply | bytes]) -> None:
        """``send_nowait`` for the replies to a group of requests: one hand-over to the
        writer for all of them (the sender thread's lock and bookkeeping once, not per reply);
        frames without a body are joined into one buffer. A bytes is a frame encoded already."""
        if self.closed:
            log.debug(
                "dropping %d replies for a closed connection: peer=%s", len(commands), self.peer
            )
            return
        buffers: list[Any] = []
        heads: list[Any] = []
        for command in commands:
            if type(command) is bytes:
                heads.append(command)
                continue
            frame = command.buffers if type(command) is EncodedReply else encode_command(command)
            if len(frame) == 1:
                heads.append(frame[0])
                continue
            if heads:
                buffers.append(b"".join(heads))
                heads = []
            buffers += frame
        if heads:
            buffers.append(b"".join(heads) if len(heads) > 1 else heads[0])
        self._writes.queue(buffers)
        if not self._in_read_batch and not self.closed:
            self._writes.flush()

    async def send(self, command: RemotingCommand) -> None:
        """Queue a command and flush it, waiting first while too many bytes are queued."""
        while not self._writes.drained.is_set() and not self.closed:
            await self._writes.drained.wait()
        if self.closed:
            raise RemotingConnectError(f"connection to {self.peer} closed: {self.close_reason}")
        self.send_nowait(command)

    # ----------------------------------------------------------------------- calls

    async def invoke(self, request: RemotingCommand, timeout_s: float) -> RemotingCommand:
        """Send a request and wait for its response (RemotingTimeoutError after ``timeout_s``)."""
        if self.closed:
            raise RemotingConnectError(f"connection to {self.peer} closed: {self.close_reason}")
        call = self._calls.open(request.opaque, self.peer)
        try:
            await self.send(request)
            with trio.move_on_after(timeout_s if timeout_s > 0 else math.inf):
                await call.event.wait()
        finally:
            self._calls.close(request.opaque)
        return call.result(self.peer, request, timeout_s)

    async def invoke_oneway(self, request: RemotingCommand) -> None:
        request.flag |= 2
        await self.send(request)


def format_addr(addr: Any) -> str:
    if isinstance(addr, tuple) and len(addr) >= 2:
        host = addr[0]
        if host.startswith("::ffff:"):  # IPv4-mapped: C++ clients only read IPv4 hosts
            host = host[7:]
        return f"{host}:{addr[1]}"
    return str(addr)
