"""What a test cluster raises: one error type a test can catch, whose message says what failed."""

from __future__ import annotations


class ClusterError(RuntimeError):
    """The cluster could not do what was asked; the message says why (and shows the log)."""


class ServerStartError(ClusterError):
    """A server exited or stayed silent while starting; the message ends with its last lines."""

    def __init__(self, message: str, *, address_in_use: bool = False) -> None:
        super().__init__(message)
        self.address_in_use = address_in_use
