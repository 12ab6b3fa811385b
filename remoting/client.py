"""RemotingClient: one connection per address, request/response by opaque, oneway, deadlines,
reconnect on next use (docs/spec/remoting.md §1).

Server-initiated requests arriving over these connections (NOTIFY_CONSUMER_IDS_CHANGED,
CHECK_TRANSACTION_STATE, ...) go to ``processors``, like on a server.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import trio

from remoting import tls
from remoting.command import RemotingCommand
from remoting.connection import Connection, HandlerResult
from remoting.errors import RemotingConnectError
from remoting.server import Processor, not_supported
from remoting.tls_connection import TlsConnection

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 3.0

# Java's client RPCHook.doBeforeRequest: called with every request just before it is sent;
# acl.credentials.SessionCredentials.sign is the one we have (ACL signatures).
BeforeRequest = Callable[[RemotingCommand], None]


def parse_addr(addr: str) -> tuple[str, int]:
    host, sep, port = addr.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"address {addr!r} is not host:port")
    return host.strip("[]"), int(port)


class RemotingClient:
    """Use ``async with RemotingClient.open() as client:`` or run it in a nursery you own."""

    def __init__(
        self,
        nursery: trio.Nursery,
        *,
        processors: dict[int, Processor] | None = None,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
        idle_timeout_s: float = 120.0,
        before_request: BeforeRequest | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self._nursery = nursery
        # TLS on every connection (Java's useTLS); remoting/tls.py client_context builds one
        # from RocketMQ's tls.client.* keys.
        self.ssl_context = ssl_context
        self.processors: dict[int, Processor] = dict(processors or {})
        self._connect_timeout_s = connect_timeout_s
        self._idle_timeout_s = idle_timeout_s
        self.before_request = before_request
        self._connections: dict[str, Connection] = {}
        self._connecting: dict[str, trio.Lock] = {}
        self.closed = False

    @classmethod
    @asynccontextmanager
    async def open(cls, **kwargs: object) -> AsyncIterator[RemotingClient]:
        async with trio.open_nursery() as nursery:
            client = cls(nursery, **kwargs)  # type: ignore[arg-type]
            try:
                yield client
            finally:
                await client.aclose()
                nursery.cancel_scope.cancel()

    def register(self, code: int, processor: Processor) -> None:
        self.processors[int(code)] = processor

    def _handle_request(self, connection: Connection, request: RemotingCommand) -> HandlerResult:
        return self.processors.get(request.code, not_supported)(connection, request)

    async def connection(self, addr: str) -> Connection:
        """The live connection to ``addr``, connecting (once, even if asked concurrently)."""
        existing = self._connections.get(addr)
        if existing is not None and not existing.closed:
            return existing
        lock = self._connecting.setdefault(addr, trio.Lock())
        async with lock:
            existing = self._connections.get(addr)
            if existing is not None and not existing.closed:
                return existing
            if self.closed:
                raise RemotingConnectError("client is closed")
            host, port = parse_addr(addr)
            try:
                with trio.fail_after(self._connect_timeout_s):
                    stream = await trio.open_tcp_stream(host, port)
            except (OSError, trio.TooSlowError) as exc:
                raise RemotingConnectError(f"connect to {addr} failed: {exc!r}") from None
            try:
                stream.setsockopt(trio.socket.IPPROTO_TCP, trio.socket.TCP_NODELAY, 1)
                connection = await self._connection(addr, host, stream)
            except OSError as exc:  # reset right after connect: getpeername finds no peer
                await stream.aclose()
                raise RemotingConnectError(f"connect to {addr} failed: {exc!r}") from None
            await self._nursery.start(connection.run)
            self._connections[addr] = connection
            return connection

    async def _connection(self, addr: str, host: str, stream: trio.SocketStream) -> Connection:
        if self.ssl_context is None:
            return Connection(stream, self._handle_request, idle_timeout_s=self._idle_timeout_s)
        try:
            secured = await tls.connect(stream, self.ssl_context, host)
        except OSError as exc:
            raise RemotingConnectError(f"connect to {addr} failed: {exc}") from None
        return TlsConnection(secured, self._handle_request, idle_timeout_s=self._idle_timeout_s)

    async def invoke(
        self, addr: str, request: RemotingCommand, timeout_s: float
    ) -> RemotingCommand:
        connection = await self.connection(addr)
        if self.before_request is not None:
            self.before_request(request)
        return await connection.invoke(request, timeout_s)

    async def invoke_oneway(self, addr: str, request: RemotingCommand) -> None:
        connection = await self.connection(addr)
        if self.before_request is not None:
            self.before_request(request)
        await connection.invoke_oneway(request)

    async def close_connection(self, addr: str) -> None:
        connection = self._connections.pop(addr, None)
        if connection is not None:
            await connection.aclose()

    async def aclose(self) -> None:
        self.closed = True
        connections, self._connections = list(self._connections.values()), {}
        for connection in connections:
            await connection.aclose()
