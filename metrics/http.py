"""MetricsHttpServer: ``GET /metrics`` over HTTP/1.1 on Trio, for Prometheus.

h11 parses the requests (a sans-IO HTTP/1.1 library: hostile bytes end in a 400 or a closed
connection, never in our parser); this module only moves bytes. One task per connection, a
bounded number of connections, a deadline on every read and write, keep-alive as Prometheus
uses it. ``render`` produces the body on the event loop (the caller keeps that short and
cooperative): a fresh part and a part made earlier, which comes already gzipped
(metrics/snapshot.py); a fresh part worth compressing is gzipped in a worker thread, where
zlib runs without the GIL, and the two gzip members go out one after the other (a gzip stream
may hold several). Scrapes that arrive together share one render.
"""

from __future__ import annotations

import gzip
import logging
from collections.abc import Awaitable, Callable

import attrs
import h11
import trio

log = logging.getLogger(__name__)

CONTENT_TYPE = b"text/plain; version=0.0.4; charset=utf-8"
MAX_CONNECTIONS = 32
MAX_HEADER_BYTES = 16 * 1024
IO_TIMEOUT_S = 30.0  # a scrape's own timeout is 10 s by default
GZIP_MIN_BYTES = 16 * 1024
READ_BYTES = 16 * 1024
_REASONS = {200: b"OK", 404: b"Not Found", 405: b"Method Not Allowed", 500: b"Server Error"}


@attrs.frozen
class Body:
    fresh: bytes
    made_before: bytes = b""
    made_before_gzipped: bytes = b""  # the same text as one gzip member; empty: none

    def plain(self) -> bytes:
        return self.fresh + self.made_before

    async def gzipped(self) -> bytes:
        if len(self.fresh) >= GZIP_MIN_BYTES:
            fresh = await trio.to_thread.run_sync(gzip.compress, self.fresh, 1)
        else:
            fresh = gzip.compress(self.fresh, 1)
        if self.made_before and not self.made_before_gzipped:
            return fresh + await trio.to_thread.run_sync(gzip.compress, self.made_before, 1)
        return fresh + self.made_before_gzipped

    def __len__(self) -> int:
        return len(self.fresh) + len(self.made_before)


Render = Callable[[], Awaitable[Body]]


class SharedRender:
    """Scrapes arriving while a render runs wait for that render instead of starting another."""

    def __init__(self, render: Render) -> None:
        self._render = render
        self._running: trio.Event | None = None
        self._result: Body | BaseException = Body(b"")

    async def __call__(self) -> Body:
        if self._running is not None:
            await self._running.wait()
        else:
            self._running = done = trio.Event()
            try:
                self._result = await self._render()
            except Exception as exc:
                log.exception("metrics render failed")
                self._result = exc
            finally:
                self._running = None
                done.set()
        if isinstance(self._result, BaseException):
            raise RuntimeError("metrics render failed") from self._result
        return self._result


class MetricsHttpServer:
    name = "metrics"

    def __init__(self, host: str, port: int, render: Render) -> None:
        self.host, self.port = host, port
        self.render = SharedRender(render)
        self.connections = 0
        self.scrapes = 0

    async def run(self, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(self.port, host=self.host or None)
        self.port = listeners[0].socket.getsockname()[1]
        log.info(
            "metrics: Prometheus text on http://%s:%d/metrics", self.host or "0.0.0.0", self.port
        )
        task_status.started(self.port)
        await trio.serve_listeners(self._connection, listeners)

    async def _connection(self, stream: trio.SocketStream) -> None:
        if self.connections >= MAX_CONNECTIONS:
            await stream.aclose()
            return
        self.connections += 1
        try:
            await self._serve(stream, h11.Connection(h11.SERVER, MAX_HEADER_BYTES))
        except (trio.BrokenResourceError, trio.ClosedResourceError, trio.TooSlowError):
            pass  # the peer went away or stalled: nothing to answer
        except h11.ProtocolError as exc:
            log.debug("metrics: bad request: %s", exc)
        finally:
            self.connections -= 1
            with trio.move_on_after(1) as cleanup:
                cleanup.shield = True
                await stream.aclose()

    async def _serve(self, stream: trio.SocketStream, conn: h11.Connection) -> None:
        while True:
            request = await _next_request(stream, conn)
            if request is None:
                return
            status, headers, body = await self._answer(request)
            with trio.fail_after(IO_TIMEOUT_S):
                await _send(stream, conn, request, status, headers, body)
            if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                return
            conn.start_next_cycle()

    async def _answer(self, request: h11.Request) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        path = request.target.split(b"?", 1)[0]
        if request.method not in (b"GET", b"HEAD"):
            return 405, [(b"allow", b"GET, HEAD")], b"only GET and HEAD\n"
        if path != b"/metrics":
            return 404, [], b"not found: the metrics are at /metrics\n"
        try:
            rendered = await self.render()
        except RuntimeError:
            return 500, [], b"the metrics could not be collected: see the server log\n"
        self.scrapes += 1
        headers = [(b"content-type", CONTENT_TYPE)]
        if len(rendered) >= GZIP_MIN_BYTES and _accepts_gzip(request):
            headers.append((b"content-encoding", b"gzip"))
            return 200, headers, await rendered.gzipped()
        return 200, headers, rendered.plain()


def _accepts_gzip(request: h11.Request) -> bool:
    return any(
        name == b"accept-encoding" and b"gzip" in value.lower() for name, value in request.headers
    )


async def _next_request(stream: trio.SocketStream, conn: h11.Connection) -> h11.Request | None:
    """The next request, its body drained; None when the peer closed between requests."""
    request = None
    with trio.fail_after(IO_TIMEOUT_S):
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = await stream.receive_some(READ_BYTES)
                if not data and conn.their_state is h11.IDLE:
                    return None
                conn.receive_data(data)
            elif isinstance(event, h11.Request):
                request = event
            elif isinstance(event, h11.EndOfMessage):
                return request
            elif isinstance(event, h11.ConnectionClosed):
                return None
            # h11.Data: a body nobody asked for, read and dropped


async def _send(
    stream: trio.SocketStream,
    conn: h11.Connection,
    request: h11.Request,
    status: int,
    headers: list[tuple[bytes, bytes]],
    body: bytes,
) -> None:
    headers = [*headers, (b"content-length", str(len(body)).encode())]
    out = conn.send(h11.Response(status_code=status, headers=headers, reason=_REASONS[status]))
    if request.method != b"HEAD":
        out += conn.send(h11.Data(data=body))
    out += conn.send(h11.EndOfMessage())
    await stream.send_all(out)
