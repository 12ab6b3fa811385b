"""A held PULL_MESSAGE's own state: what its wake runs again and how it is answered (split
out of broker/processor/pull.py). The hold service (broker/long_polling.py) keeps the record
and calls ``wake`` once, from the arrival listener or its timer."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import attrs
import trio

from remoting.codes import ResponseCode
from remoting.command import EncodedReply, RemotingCommand
from remoting.errors import RequestError
from remoting.headers import PullMessageRequestHeader
from remoting.log_limit import bug_tracebacks, log_limited

if TYPE_CHECKING:
    from broker.processor.pull import PullMessageProcessor
    from remoting.connection import Connection

log = logging.getLogger("broker.processor.pull")

_RETRY_IMMEDIATELY = int(ResponseCode.PULL_RETRY_IMMEDIATELY)


class HeldPullRequest:
    """One held pull: what its wake runs again (Java's executeRequestWhenWakeup)."""

    __slots__ = ("connection", "deadline", "header", "message_filter", "processor", "request")

    def __init__(
        self,
        processor: PullMessageProcessor,
        connection: Connection,
        request: RemotingCommand,
        header: PullMessageRequestHeader,
        message_filter: Any,
    ) -> None:
        self.processor = processor
        self.connection = connection
        self.request = request
        self.header = header
        self.message_filter = message_filter
        self.deadline = 0.0

    def suspend(self) -> None:
        header = self.header
        self.processor.broker.pull_hold.suspend(
            header.topic,
            header.queue_id,
            header.queue_offset,
            self.message_filter,
            self.deadline,
            self.wake,
            self.connection,
        )

    def wake(self) -> None:
        connection = self.connection
        if connection.closed:
            connection.answer_deferred(self.request, None)
            return
        response = self.run()
        if response is not None:
            connection.answer_deferred(self.request, response)

    def run(self) -> RemotingCommand | EncodedReply | None:
        """The pull once more, without suspension: its answer, or None when held again."""
        request = self.request
        while True:
            try:
                response = self.processor.process(
                    self.connection, request, self.header, allow_suspend=False
                )
            except RequestError as exc:
                return request.error_response(exc.code, exc.remark)
            except Exception as exc:  # a bug: answered as a handler's raise is
                log_limited(log, bug_tracebacks, ("held pull",), logging.ERROR,
                            "held pull failed", exc_info=True)  # fmt: skip
                return request.error_response(ResponseCode.SYSTEM_ERROR, repr(exc))
            if response.code != _RETRY_IMMEDIATELY:
                return response
            # Woken by messages the filter refused on their records (SQL92 only decides there):
            # hold on past them, as Java's hold re-checks an arrival's properties first.
            assert type(response) is RemotingCommand and response.ext_fields is not None
            next_offset = int(response.ext_fields["nextBeginOffset"])
            header = self.header
            if next_offset <= header.queue_offset or trio.current_time() >= self.deadline:
                return response
            self.header = header = attrs.evolve(header, queue_offset=next_offset)
            hold = self.processor.broker.pull_hold
            if hold.max_offset(header.topic, header.queue_id) <= next_offset:
                self.suspend()
                return None
