"""PendingCalls: requests a connection has sent and waits to have answered, matched by
``opaque`` (docs/spec/remoting.md §1: many outstanding, answered in any order). Bounded: past
``MAX_PENDING_CALLS`` a new call is refused at once."""

from __future__ import annotations

import trio

from remoting.command import RemotingCommand
from remoting.errors import RemotingTimeoutError, RemotingTooMuchRequestError

MAX_PENDING_CALLS = 65536


class Call:
    __slots__ = ("event", "response")

    def __init__(self) -> None:
        self.event = trio.Event()
        self.response: RemotingCommand | BaseException | None = None

    def result(self, peer: str, request: RemotingCommand, timeout_s: float) -> RemotingCommand:
        """The response, or the error that ended the wait (None: it timed out)."""
        response = self.response
        if response is None:
            raise RemotingTimeoutError(
                f"no response from {peer} to code={request.code} within {timeout_s:g} s"
            )
        if isinstance(response, BaseException):
            raise response
        return response


class PendingCalls:
    __slots__ = ("_calls", "_limit")

    def __init__(self, limit: int = MAX_PENDING_CALLS) -> None:
        self._calls: dict[int, Call] = {}
        self._limit = limit

    def __len__(self) -> int:
        return len(self._calls)

    def open(self, opaque: int, peer: str) -> Call:
        if len(self._calls) >= self._limit:
            raise RemotingTooMuchRequestError(f"{len(self._calls)} calls pending on {peer}")
        call = self._calls[opaque] = Call()
        return call

    def close(self, opaque: int) -> None:
        self._calls.pop(opaque, None)

    def answer(self, response: RemotingCommand) -> bool:
        """Hand a response to its call; False when none waits for it (timed out, or never
        sent)."""
        call = self._calls.pop(response.opaque, None)
        if call is None:
            return False
        call.response = response
        call.event.set()
        return True

    def fail_all(self, error: BaseException) -> None:
        calls, self._calls = self._calls, {}
        for call in calls.values():
            call.response = error
            call.event.set()
