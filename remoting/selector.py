"""ReadSelector: one task reads every connection of a server, as Netty's selector threads do
for a Java broker.

With a task per connection, each request cost two Trio task switches and an ``epoll_ctl`` to
re-arm the socket: a fifth of a busy broker's event loop. Here the connections' sockets sit in
one level-triggered epoll of our own, the task waits for that epoll to become readable, and
reads each ready connection in turn (``Connection.on_readable``). After a round that found
work it looks again after a plain checkpoint before waiting: a busy server's next requests are
usually in by then. A connection with too many reply bytes queued leaves the epoll until they
drain, so its peer is not read meanwhile.

Linux only (``select.epoll``); elsewhere each connection keeps its own reader task.
"""

from __future__ import annotations

import logging
import select
from typing import TYPE_CHECKING

import trio

from remoting.log_limit import bug_tracebacks, log_limited

if TYPE_CHECKING:
    from remoting.connection import Connection

log = logging.getLogger(__name__)

MAX_EVENTS = 64


class ReadSelector:
    def __init__(self) -> None:
        self._epoll = select.epoll()
        self._connections: dict[int, Connection] = {}

    @staticmethod
    def available() -> bool:
        return hasattr(select, "epoll")

    def add(self, connection: Connection) -> None:
        fd = connection.fileno()
        self._connections[fd] = connection
        self._epoll.register(fd, select.EPOLLIN)

    def remove(self, connection: Connection) -> None:
        """Stop reading it. Call before its socket closes: epoll knows descriptors by number."""
        fd = connection.fileno()
        if self._connections.get(fd) is connection:
            del self._connections[fd]
            try:
                self._epoll.unregister(fd)
            except (OSError, ValueError):  # the selector has stopped
                pass

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        wait_readable, checkpoint = trio.lowlevel.wait_readable, trio.lowlevel.checkpoint
        poll, connections = self._epoll.poll, self._connections
        epoll_fd = self._epoll.fileno()
        task_status.started()
        try:
            eager = False
            while True:
                if eager:
                    await checkpoint()
                else:
                    await wait_readable(epoll_fd)
                events = poll(0, MAX_EVENTS)
                eager = bool(events)
                for fd, _ in events:
                    connection = connections.get(fd)
                    if connection is not None:
                        self._read(connection)
        finally:
            self._epoll.close()

    def _read(self, connection: Connection) -> None:
        try:
            reading = connection.on_readable()
        except Exception:
            # Only a bug gets here (handlers' errors are answered): that connection goes, the
            # others are still served.
            log_limited(
                log,
                bug_tracebacks,
                "read",
                logging.ERROR,
                "reading failed, closing: peer=%s",
                connection.peer,
                exc_info=True,
            )
            connection.close_soon("reading failed")
            reading = False
        if not reading:
            self.remove(connection)
