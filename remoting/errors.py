"""Typed errors raised at the protocol boundaries (docs/STYLE.md §6)."""

from __future__ import annotations


class RemotingError(Exception):
    """Base of every error the remoting layer raises."""


class RemoteProtocolError(RemotingError):
    """A peer sent bytes that are not a valid frame or command. The connection is unusable."""


class RemotingConnectError(RemotingError):
    """Could not connect, or the connection dropped while a call was pending."""


class RemotingTimeoutError(RemotingError):
    """No response arrived before the call's deadline."""


class RemotingTooMuchRequestError(RemotingError):
    """Too many calls are already pending on the connection."""


class RequestError(RemotingError):
    """A request is wrong in a way the peer must be told: answered with ``code`` and ``remark``."""

    def __init__(self, code: int, remark: str) -> None:
        super().__init__(f"code={int(code)} {remark}")
        self.code = int(code)
        self.remark = remark
