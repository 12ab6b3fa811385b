"""A synchronous facade for scripts: the async client runs on a Trio loop in a background thread
and these wrappers call into it.

    with SyncProducer("127.0.0.1:9876", "PG") as producer:
        producer.send(Message("Topic", b"hello"))
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import trio

from client.consumer import Listener, PushConsumer
from client.message import Message, SendResult
from client.producer import Producer


class Portal:
    """Runs ``opener()`` (an async context manager) on a private loop until ``close``."""

    def __init__(self, opener: Callable[[], AbstractAsyncContextManager[Any]]) -> None:
        self._opener = opener
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self.value: Any = None
        self._thread = threading.Thread(target=self._run, name="rocketmq-trio", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise self._error

    def _run(self) -> None:
        try:
            trio.run(self._main)
        except BaseException as exc:  # surfaced to the caller of __init__
            self._error = exc
            self._ready.set()

    async def _main(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        self._stop = trio.Event()
        async with self._opener() as value:
            self.value = value
            self._ready.set()
            await self._stop.wait()

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        return trio.from_thread.run(fn, *args, trio_token=self._token)

    def close(self) -> None:
        if self._thread.is_alive():
            trio.from_thread.run_sync(self._stop.set, trio_token=self._token)
            self._thread.join()


class SyncProducer:
    def __init__(self, namesrv_addr: str, group: str, **kwargs: Any) -> None:
        self._portal = Portal(lambda: Producer.open(namesrv_addr, group, **kwargs))

    def send(self, msg: Message) -> SendResult:
        return self._portal.call(self._portal.value.send, msg)

    def send_batch(self, msgs: list[Message]) -> SendResult:
        return self._portal.call(self._portal.value.send_batch, msgs)

    def send_orderly(self, msg: Message, arg: object) -> SendResult:
        return self._portal.call(self._portal.value.send_orderly, msg, arg)

    def send_oneway(self, msg: Message) -> None:
        self._portal.call(self._portal.value.send_oneway, msg)

    def close(self) -> None:
        self._portal.close()

    def __enter__(self) -> SyncProducer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SyncPushConsumer:
    """The listener runs on the client's loop thread: keep it short or hand work off."""

    def __init__(
        self,
        namesrv_addr: str,
        group: str,
        listener: Listener,
        subscriptions: dict[str, str],
        **kwargs: Any,
    ) -> None:
        def opener() -> AbstractAsyncContextManager[PushConsumer]:
            return PushConsumer.open(namesrv_addr, group, listener, subscriptions, **kwargs)

        self._portal = Portal(opener)

    def close(self) -> None:
        self._portal.close()

    def __enter__(self) -> SyncPushConsumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["Portal", "SyncProducer", "SyncPushConsumer"]
