"""Stand-ins for what remoting/selector.py reads: a connection that echoes, and the selector's
epoll with its looks (epoll_wait calls) counted."""

from __future__ import annotations

import socket
from typing import Any


class Echo:
    """A connection that answers each byte it reads with the same byte, at once."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self.read: list[bytes] = []

    def fileno(self) -> int:
        return self._sock.fileno()

    def on_readable(self) -> bool:
        data = self._sock.recv(4096)
        self.read.append(data)
        if data:
            self._sock.send(data)
        return bool(data)


class CountingEpoll:
    """The selector's epoll, with its looks counted."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.looks = 0
        self.fileno, self.register = inner.fileno, inner.register
        self.unregister, self.close = inner.unregister, inner.close

    def poll(self, timeout: float, max_events: int) -> list[tuple[int, int]]:
        self.looks += 1
        return self._inner.poll(timeout, max_events)
