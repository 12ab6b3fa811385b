"""TrioBridge: the gRPC server's asyncio loop (the main thread) calling into the Trio world
of our remoting client (a thread of its own), without blocking either loop.

A call from asyncio is handed to Trio with ``TrioToken.run_sync_soon`` (thread-safe, never
blocks), which starts it as a task in the bridge's nursery; its outcome comes back with
``loop.call_soon_threadsafe`` onto an asyncio future. No thread per call, no polling. The
number of calls in flight is bounded by the gRPC server's ``maximum_concurrent_rpcs``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import outcome
import trio

from client.errors import sole_exception

log = logging.getLogger(__name__)

T = TypeVar("T")


class TrioBridge:
    def __init__(self, main: Callable[[trio.Nursery, Callable[[], None]], Awaitable[None]]):
        """``main(nursery, ready)`` runs in the Trio thread: it opens what the calls need,
        calls ``ready()``, and returns when the bridge is closed."""
        self._main = main
        self._token: trio.lowlevel.TrioToken | None = None
        self._nursery: trio.Nursery | None = None
        self._stop: trio.Event | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="trio-remoting", daemon=True)
        self.failure: BaseException | None = None

    def start(self, timeout_s: float) -> None:
        """Starts the Trio thread and waits until ``main`` is ready; raises what ended it."""
        self._thread.start()
        if not self._ready.wait(timeout_s):
            raise TimeoutError(f"the remoting side did not start within {timeout_s} s")
        if self.failure is not None:
            raise self.failure

    def _run(self) -> None:
        try:
            trio.run(self._trio_main)
        except BaseException as exc:  # told to start() or, later, to whoever joins
            sole = sole_exception(exc) if isinstance(exc, BaseExceptionGroup) else exc
            self.failure = sole if sole is not None else exc
        finally:
            self._ready.set()

    async def _trio_main(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        self._stop = trio.Event()
        async with trio.open_nursery() as nursery:
            self._nursery = nursery

            async def body() -> None:
                await self._main(nursery, self._ready.set)

            nursery.start_soon(body)
            await self._stop.wait()
            nursery.cancel_scope.cancel()

    def close(self, timeout_s: float = 5.0) -> None:
        if self._token is not None and self._stop is not None:
            try:
                self._token.run_sync_soon(self._stop.set)
            except trio.RunFinishedError:
                pass
        self._thread.join(timeout_s)

    async def call(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        """``await fn(*args)`` in the Trio thread, awaited from the asyncio loop."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()

        def deliver(result: outcome.Outcome) -> None:
            if not future.done():  # the gRPC call may have been cancelled meanwhile
                if isinstance(result, outcome.Error):
                    future.set_exception(result.error)
                else:
                    future.set_result(result.value)

        async def run() -> None:
            result = await outcome.acapture(fn, *args)
            if isinstance(result, outcome.Error) and not isinstance(result.error, Exception):
                stopping = outcome.Error(RuntimeError("the remoting side is stopping"))
                loop.call_soon_threadsafe(deliver, stopping)
                result.unwrap()  # Cancelled and friends belong to Trio
            loop.call_soon_threadsafe(deliver, result)

        def spawn() -> None:
            assert self._nursery is not None
            self._nursery.start_soon(run)

        if self._token is None:
            raise RuntimeError("the bridge is not started")
        try:
            self._token.run_sync_soon(spawn)
        except trio.RunFinishedError:
            raise RuntimeError("the remoting side has stopped") from None
        return await future


async def from_trio(loop: asyncio.AbstractEventLoop, coro: Awaitable[T]) -> T:
    """The other way (in the Trio thread): ``coro`` run on the asyncio ``loop``, awaited here
    without blocking the Trio thread; cancelled there when this is cancelled."""
    token = trio.lowlevel.current_trio_token()
    done = trio.Event()
    future = asyncio.run_coroutine_threadsafe(coro, loop)  # type: ignore[arg-type]

    def wake(_: Any) -> None:
        try:
            token.run_sync_soon(done.set)
        except trio.RunFinishedError:
            pass

    future.add_done_callback(wake)
    try:
        await done.wait()
    finally:
        if not future.done():
            future.cancel()
    return future.result()
