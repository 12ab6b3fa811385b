"""How a Connection hands the requests it reads to its handlers and answers them (split out of
remoting/connection.py, whose class mixes this in; see its docstring for the rules).

A handler that answers at once is answered inline; one that returns an awaitable gets a task,
counted by the connection's in-flight limits. The requests of one read go to the group handler
together when there is one (a server's ``handle_requests``), each still answered on its own.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from remoting.codes import ResponseCode
from remoting.command import RPC_ONEWAY, EncodedReply, RemotingCommand
from remoting.errors import RequestError
from remoting.log_limit import bug_tracebacks, log_limited

if TYPE_CHECKING:
    import trio

    from remoting.calls import PendingCalls
    from remoting.connection import Connection
    from remoting.in_flight import InFlight

# The connection's logger: operators filter on it, and this is still the connection speaking.
log = logging.getLogger("remoting.connection")

HandlerResult = RemotingCommand | EncodedReply | Awaitable[RemotingCommand | None] | None
RequestHandler = Callable[["Connection", RemotingCommand], HandlerResult]
# One result per request, in order; an exception is answered as a handler's raise is, bytes
# are the reply's whole frame, encoded by the handler (broker/processor/send_reply.py).
GroupHandler = Callable[
    ["Connection", list[RemotingCommand]], list[HandlerResult | bytes | Exception]
]


class RequestHandling:
    """Connection's request side; the attributes are the connection's."""

    request_handler: RequestHandler | None
    group_handler: GroupHandler | None
    closed: bool
    peer: str
    _calls: PendingCalls
    _in_flight: InFlight
    _nursery: trio.Nursery | None
    send_nowait: Callable[[RemotingCommand | EncodedReply], None]
    send_many_nowait: Callable[[list[RemotingCommand | EncodedReply | bytes]], None]

    def _on_commands(self, commands: list[RemotingCommand]) -> None:
        """A read's commands in order: each run of requests goes to the handlers as a group."""
        requests: list[RemotingCommand] = []
        for command in commands:
            if not command.is_response:
                requests.append(command)
                continue
            if requests:
                self._dispatch_group(requests)
                requests = []
            self._on_command(command)
        if requests:
            self._dispatch_group(requests)

    def _dispatch_group(self, requests: list[RemotingCommand]) -> None:
        group_handler = self.group_handler
        if group_handler is None or len(requests) == 1 or self.request_handler is None:
            for request in requests:
                self._dispatch(request)
            return
        try:
            results = group_handler(self, requests)  # type: ignore[arg-type]
        except Exception as exc:  # a bug: every request of the group answers it
            results = [exc] * len(requests)
        self._answer_group(requests, results)

    def _answer_group(
        self, requests: list[RemotingCommand], results: list[HandlerResult | bytes | Exception]
    ) -> None:
        """Answer a group's requests in order: replies ready at once leave in one hand-over
        to the writer, an awaitable's when it has its answer."""
        ready: list[RemotingCommand | EncodedReply | bytes] = []
        for request, result in zip(requests, results, strict=True):
            if isinstance(result, Exception):
                result = self._failure_response(request, result)
            if (
                type(result) is RemotingCommand
                or type(result) is bytes
                or type(result) is EncodedReply
            ):
                if not request.flag & RPC_ONEWAY:
                    ready.append(result)
                continue
            self._complete(request, result)
        if ready:
            self.send_many_nowait(ready)

    def _on_command(self, command: RemotingCommand) -> None:
        if not command.is_response:
            self._dispatch(command)
        elif not self._calls.answer(command):
            log.debug(
                "response without a pending call: peer=%s opaque=%d", self.peer, command.opaque
            )

    def _dispatch(self, request: RemotingCommand) -> None:
        if self.request_handler is None:
            if not request.is_oneway:
                self.send_nowait(
                    request.error_response(
                        ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                        f" request type {request.code} not supported",
                    )
                )
            return
        try:
            result = self.request_handler(self, request)  # type: ignore[arg-type]
        except Exception as exc:
            result = self._failure_response(request, exc)
        if type(result) is RemotingCommand or type(result) is EncodedReply:  # ready at once
            if not request.flag & RPC_ONEWAY:
                self.send_nowait(result)
            return
        self._complete(request, result)

    def _complete(self, request: RemotingCommand, result: HandlerResult) -> None:
        """Answer now, or once the handler's awaitable has its answer."""
        # Most answers are ready at once: the type test spares them isawaitable's ABC check.
        # The handler has run: its result is never dropped (remoting/in_flight.py).
        if type(result) is not RemotingCommand and inspect.isawaitable(result):
            size = len(request.body)
            self._in_flight.started(size)
            assert self._nursery is not None
            self._nursery.start_soon(self._finish_request, request, result, size)
            return
        if result is not None and not request.is_oneway:
            self.send_nowait(result)

    def defer(self, request: RemotingCommand) -> None:
        """A handler that returned None answers later, without a task (a held pull): counted
        in flight, as an awaitable is, until ``answer_deferred``."""
        self._in_flight.started(len(request.body))

    def answer_deferred(
        self, request: RemotingCommand, response: RemotingCommand | EncodedReply | None
    ) -> None:
        self._in_flight.finished(len(request.body))
        if response is not None and not request.is_oneway and not self.closed:
            self.send_nowait(response)

    async def _finish_request(
        self, request: RemotingCommand, awaitable: Awaitable[Any], size: int
    ) -> None:
        try:
            try:
                response = await awaitable
            except Exception as exc:
                response = self._failure_response(request, exc)
            if response is not None and not request.is_oneway and not self.closed:
                self.send_nowait(response)
        finally:
            self._in_flight.finished(size)

    def _failure_response(self, request: RemotingCommand, exc: Exception) -> RemotingCommand:
        if isinstance(exc, RequestError):
            return request.error_response(exc.code, exc.remark)
        log_limited(
            log,
            bug_tracebacks,
            ("request", request.code),
            logging.ERROR,
            "request failed: code=%d peer=%s",
            request.code,
            self.peer,
            exc_info=True,
        )
        return request.error_response(ResponseCode.SYSTEM_ERROR, repr(exc))
