"""RemotingServer: accepts connections and dispatches requests to processors by code
(docs/STYLE.md §5, §6; docs/spec/remoting.md §3.3).

A processor is ``def handle(connection, request)`` returning a response command, None (no
reply), or an awaitable of either; see ``remoting.connection``. A code may also have a group
processor (``register_group``): the consecutive requests of one read with such codes go to it
together, checked by the access hook one by one first (the broker's sends: one store pass), and
so do those of every connection the selector found ready in one round (``handle_round``, with
``connections=``). Unknown codes go to ``default_processor``: the broker answers
REQUEST_CODE_NOT_SUPPORTED, the NameServer nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import trio

from remoting.accept import accept_loop
from remoting.budget import PartialFrameBudget
from remoting.codes import ResponseCode
from remoting.command import RemotingCommand
from remoting.connection import (
    IDLE_TIMEOUT_S,
    READ_CHUNK,
    Connection,
    HandlerResult,
    format_addr,
)
from remoting.frame import MAX_FRAME_BYTES
from remoting.in_flight import MAX_HANDLER_TASKS, MAX_IN_FLIGHT_BYTES
from remoting.log_limit import bug_tracebacks, log_limited
from remoting.memory import pin_mmap_threshold
from remoting.selector import ReadSelector
from remoting.sender import OutboundSender
from remoting.tls import TlsServer
from remoting.tls_connection import TlsConnection

log = logging.getLogger(__name__)

Processor = Callable[[Connection, RemotingCommand], HandlerResult]
# (connection, requests) of one connection, or with ``connections=`` (one per request, a
# selector round's: remoting/selector.py) of several, the first of them as ``connection``.
GroupProcessor = Callable[..., list[HandlerResult | bytes | Exception]]
RoundProcessor = Callable[
    [list[Connection], list[RemotingCommand]], list[HandlerResult | bytes | Exception] | None
]
# The access check (acl/hook.py): None lets the request through, a command is its refusal.
Authorize = Callable[[Connection, RemotingCommand], RemotingCommand | None]

# What all connections of a server may hold in partial frames together (a connection alone
# holds at most a frame and one read): serverPartialFramesMaxBytes.
MAX_PARTIAL_FRAMES_BYTES = 256 * 1024 * 1024


def not_supported(connection: Connection, request: RemotingCommand) -> RemotingCommand:
    """The broker's answer to a code it has no processor for (Java's exact remark)."""
    return request.error_response(
        ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f" request type {request.code} not supported"
    )


def no_reply(connection: Connection, request: RemotingCommand) -> None:
    """The NameServer's default processor returns null: Java sends no response at all."""
    log.debug("no processor, not answering: code=%d peer=%s", request.code, connection.peer)
    return None


def partial_frames_budget(limit_bytes: int = MAX_PARTIAL_FRAMES_BYTES) -> PartialFrameBudget:
    """The limit on partial frames a server's connections share, or several servers' (pass it
    to each as ``budget``). A connection holding no more than one read is never closed for it."""
    return PartialFrameBudget(limit_bytes, floor=READ_CHUNK)


async def _shielded(
    scopes: list[trio.CancelScope],
    run: Callable[..., Awaitable[None]],
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """``run`` deaf to cancellation from outside; it stops when its scope (in ``scopes``) is
    cancelled."""
    with trio.CancelScope(shield=True) as scope:
        scopes.append(scope)
        await run(task_status=task_status)


def _run_group(
    processor: GroupProcessor | None,
    connections: list[Connection],
    run: list[RemotingCommand],
    mixed: bool,
) -> list[HandlerResult | bytes | Exception]:
    """A run's results; ``connections[i]`` sent ``run[i]``, and ``mixed`` says they are not
    all one connection (the processor then takes them as ``connections``)."""
    assert processor is not None
    try:
        if mixed:
            return processor(connections[0], run, connections=connections)
        return processor(connections[0], run)
    except Exception as exc:  # a bug in the group processor: each request answers it
        return [exc] * len(run)


class RemotingServer:
    # What a request or round handler in C reads at every call (the broker's lone-send front
    # and round of sends, broker/store/native/lone_send.c, round_send.c), at their offsets;
    # the rest are ordinary attributes.
    __slots__ = ("__dict__", "__weakref__", "authorize", "processors", "round_processor")

    def __init__(
        self,
        host: str,
        port: int,
        *,
        name: str = "remoting-server",
        processors: dict[int, Processor] | None = None,
        default_processor: Processor = not_supported,
        max_frame_bytes: int = MAX_FRAME_BYTES,
        idle_timeout_s: float = IDLE_TIMEOUT_S,
        max_handler_tasks: int = MAX_HANDLER_TASKS,
        max_in_flight_bytes: int = MAX_IN_FLIGHT_BYTES,
        max_partial_frames_bytes: int = MAX_PARTIAL_FRAMES_BYTES,
        budget: PartialFrameBudget | None = None,
        on_connection_closed: Callable[[Connection], None] | None = None,
        native_sender: bool = True,
        read_selector: bool = True,
        authorize: Authorize | None = None,
        tls: TlsServer | None = None,
    ) -> None:
        self.name = name
        self.host, self.port = host, port
        self.processors: dict[int, Processor] = dict(processors or {})
        self.group_processors: dict[int, GroupProcessor] = {}
        self.round_processor: RoundProcessor | None = None
        self.round_handler: RoundProcessor | None = None  # the selector's, when not handle_round
        self.front: Processor | None = None
        self.default_processor = default_processor
        self.authorize = authorize
        self.connections: set[Connection] = set()
        self._max_frame_bytes = max_frame_bytes
        self._idle_timeout_s = idle_timeout_s
        self._max_handler_tasks = max_handler_tasks
        self._max_in_flight_bytes = max_in_flight_bytes
        # Servers of one process may share one (the broker's main and VIP ports).
        self.budget = budget or partial_frames_budget(max_partial_frames_bytes)
        if self.budget.limit < max_frame_bytes:
            log.warning(
                "%s: partial frames limit %d < frame limit %d: frames above %d cannot arrive",
                name,
                self.budget.limit,
                max_frame_bytes,
                self.budget.limit,
            )
        self._on_connection_closed = on_connection_closed
        self._listeners: list[trio.SocketListener] = []
        self._accepting = trio.CancelScope()
        # Replies written by a native thread, off the event loop (remoting/sender.py).
        self._use_sender = native_sender and OutboundSender.available()
        self._sender: OutboundSender | None = None
        # One task reads every connection (remoting/selector.py).
        self._use_selector = read_selector and ReadSelector.available()
        self._selector: ReadSelector | None = None
        # tls.server.mode permissive or enforcing (remoting/tls.py); None: plain only.
        self.tls = tls

    def register(self, code: int, processor: Processor) -> None:
        self.processors[int(code)] = processor

    def register_group(self, code: int, processor: GroupProcessor) -> None:
        """``processor`` takes runs of ``code`` requests, ``processor(connection, requests)`` or,
        when they came from several connections, ``processor(connection, requests,
        connections=...)`` (one per request); ``register``'s still takes lone ones."""
        self.group_processors[int(code)] = processor

    def register_round(
        self, processor: RoundProcessor, handler: RoundProcessor | None = None
    ) -> None:
        """``processor(connections, requests)`` takes a selector round first, whole, when no
        ACL asks first: its results, or None having done nothing (the round then goes on as
        below). The broker's round of plain sends (broker/processor/send_plain.py).
        ``handler``: what answers every round exactly as ``handle_round`` would (calling it
        for what it does not take itself), given to the selector in its place when the
        server starts (the broker's round of sends in C, send_plain.round_front)."""
        self.round_processor = processor
        self.round_handler = handler

    def register_front(self, front: Processor) -> None:
        """``front(connection, request)`` answers every request exactly as ``handle_request``
        would (calling it for what it does not take itself): the request handler of the
        connections made from now on. The broker's lone plain send in C
        (broker/processor/send_plain.py lone_front)."""
        self.front = front

    def handle_requests(
        self, connection: Connection, requests: list[RemotingCommand]
    ) -> list[HandlerResult | bytes | Exception]:
        """The requests of one read, one result each, in order: runs of consecutive requests
        to one group processor go to it together, every other request to ``handle_request``."""
        return self._handle_runs([connection] * len(requests), requests)

    def handle_round(
        self, connections: list[Connection], requests: list[RemotingCommand]
    ) -> list[HandlerResult | bytes | Exception]:
        """``handle_requests`` for the requests of a selector round, ``requests[i]`` from
        ``connections[i]`` (each connection's in its order): a run of one group processor's
        requests may span connections, so one store pass takes every ready connection's sends
        (the selector's round, remoting/selector.py)."""
        whole = self.round_processor
        if whole is not None and self.authorize is None:
            try:
                results = whole(connections, requests)
            except Exception as exc:  # a bug: every request of the round answers it
                return [exc] * len(requests)
            if results is not None:
                return results
        return self._handle_runs(connections, requests)

    def _handle_runs(
        self, connections: list[Connection], requests: list[RemotingCommand]
    ) -> list[HandlerResult | bytes | Exception]:
        """``handle_round`` past its round processor: runs of one group processor's requests
        go to it together, every other request to ``handle_request``."""
        groups, authorize = self.group_processors, self.authorize
        if authorize is None and requests:
            # The common round (every sync send of a busy broker): one group processor's
            # requests, handed over as they are, without a run and its owners rebuilt
            run_processor = groups.get(requests[0].code)
            if run_processor is not None:
                for request in requests:
                    if groups.get(request.code) is not run_processor:
                        break
                else:
                    mixed = connections.count(connections[0]) != len(connections)
                    return _run_group(run_processor, connections, requests, mixed)
        results: list[HandlerResult | bytes | Exception] = []
        run: list[RemotingCommand] = []
        owners: list[Connection] = []
        mixed = False
        run_processor = None
        for connection, request in zip(connections, requests, strict=True):
            group = groups.get(request.code)
            answer: HandlerResult | bytes | Exception = None
            if group is not None and authorize is not None:
                try:
                    answer = authorize(connection, request)
                except Exception as exc:
                    answer = exc
            if group is None or answer is not None:
                if run:
                    results += _run_group(run_processor, owners, run, mixed)
                    run, owners, mixed = [], [], False
                if answer is None:
                    try:
                        answer = self.handle_request(connection, request)
                    except Exception as exc:
                        answer = exc
                results.append(answer)
                continue
            if group is not run_processor and run:
                results += _run_group(run_processor, owners, run, mixed)
                run, owners, mixed = [], [], False
            run_processor = group
            if owners and owners[-1] is not connection:
                mixed = True
            run.append(request)
            owners.append(connection)
        if run:
            results += _run_group(run_processor, owners, run, mixed)
        return results

    def handle_request(self, connection: Connection, request: RemotingCommand) -> HandlerResult:
        processor = self.processors.get(request.code)
        if processor is None:
            return self.default_processor(connection, request)
        # ACL: checked once here, before any processor sees the request (Java's RPC hook).
        if self.authorize is not None:
            refusal = self.authorize(connection, request)
            if refusal is not None:
                return refusal
        return processor(connection, request)

    async def run(self, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        """Listen and serve; ``started(port)`` gives the bound port (pass port 0 in tests)."""
        pin_mmap_threshold()  # big frames' buffers are unmapped when freed
        self._listeners = await trio.open_tcp_listeners(self.port, host=self.host or None)
        self.port = self._listeners[0].socket.getsockname()[1]
        log.info("%s listening: address=%s:%d", self.name, self.host or "0.0.0.0", self.port)
        try:
            # The sender and the selector outlive every connection: replies queued by the
            # last requests leave, and connections leave the selector before it closes. A
            # cancellation from outside reaches the connections first (a handler that had not
            # started yet still registers with both); they stop only once _serve has returned.
            transport: list[trio.CancelScope] = []
            async with trio.open_nursery() as outer:
                if self._use_sender:
                    self._sender = OutboundSender()
                    await outer.start(_shielded, transport, self._sender.run)
                if self._use_selector:
                    self._selector = ReadSelector(
                        self.round_handler or self.handle_round,
                        self._sender.kick if self._sender else None,
                    )
                    await outer.start(_shielded, transport, self._selector.run)
                try:
                    await self._serve(task_status)
                finally:
                    for scope in transport:
                        scope.cancel()
        finally:
            self._sender = self._selector = None
            with trio.CancelScope(shield=True):
                for listener in self._listeners:
                    await listener.aclose()

    async def _serve(self, task_status: trio.TaskStatus[int]) -> None:
        async with trio.open_nursery() as handlers:
            task_status.started(self.port)
            with self._accepting:
                async with trio.open_nursery() as acceptors:
                    for listener in self._listeners:
                        acceptors.start_soon(
                            accept_loop,
                            self.name,
                            listener,
                            self._handle_connection,
                            handlers,
                            self.connections.__len__,
                        )
            for listener in self._listeners:
                await listener.aclose()

    async def _connection(self, stream: trio.SocketStream) -> Connection | None:
        """The seam between plain and TLS: a plain connection is read by the selector and
        written by the sender thread; a TLS one has its own reader and writer tasks."""
        handler = self.handle_request if self.front is None else self.front
        limits = {
            "max_frame_bytes": self._max_frame_bytes,
            "idle_timeout_s": self._idle_timeout_s,
            "max_handler_tasks": self._max_handler_tasks,
            "max_in_flight_bytes": self._max_in_flight_bytes,
            "budget": self.budget,
        }
        if self.tls is not None:
            peer = format_addr(stream.socket.getpeername())
            served = await self.tls.accept(stream, peer, self._idle_timeout_s)
            if served is None:
                return None
            if isinstance(served, trio.SSLStream):
                return TlsConnection(served, handler, group_handler=self.handle_requests, **limits)
        return Connection(
            stream,
            handler,
            group_handler=self.handle_requests,
            sender=self._sender,
            selector=self._selector,
            **limits,
        )

    async def stop_accepting(self) -> None:
        """Close the listening sockets; connections already open keep being served."""
        self._accepting.cancel()
        for listener in self._listeners:
            await listener.aclose()

    async def _handle_connection(self, stream: trio.SocketStream) -> None:
        try:
            connection = await self._connection(stream)
        except OSError as exc:  # the peer vanished between accept and getpeername
            log.debug("connection gone before it was served: %r", exc)
            await stream.aclose()
            return
        if connection is None:  # refused by the TLS mode (remoting/tls.py said why)
            return
        self.connections.add(connection)
        log.debug("connection opened: peer=%s", connection.peer)
        try:
            await connection.run()
        except* Exception:
            # Anything escaping a connection handler would kill the whole server.
            log_limited(
                log,
                bug_tracebacks,
                "connection",
                logging.ERROR,
                "connection handler failed: peer=%s",
                connection.peer,
                exc_info=True,
            )
        finally:
            self.connections.discard(connection)
            log.debug(
                "connection closed: peer=%s reason=%s", connection.peer, connection.close_reason
            )
            if self._on_connection_closed is not None:
                try:
                    self._on_connection_closed(connection)
                except Exception:
                    log_limited(
                        log,
                        bug_tracebacks,
                        "on_connection_closed",
                        logging.ERROR,
                        "on_connection_closed failed: peer=%s",
                        connection.peer,
                        exc_info=True,
                    )
