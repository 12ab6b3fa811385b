"""Many admin calls at once, each answering on its own: a page about 50 groups or 8 brokers
asks them together (at most ``limit`` in flight) and shows what each said, a failure
included, instead of failing whole because one broker is down."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable, Iterable
from typing import TypeVar

import trio

from client.errors import MQClientError
from remoting.errors import RemotingError

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
CONCURRENT_CALLS = 16
EXPECTED = (MQClientError, RemotingError, OSError)


async def each(
    keys: Iterable[K], call: Callable[[K], Awaitable[V]], limit: int = CONCURRENT_CALLS
) -> dict[K, V | Exception]:
    """``call(key)`` for every key; a key's value is its result or the expected error it
    raised (anything else is a bug and propagates)."""
    out: dict[K, V | Exception] = {}
    limiter = trio.CapacityLimiter(limit)

    async def one(key: K) -> None:
        async with limiter:
            try:
                out[key] = await call(key)
            except EXPECTED as exc:
                out[key] = exc

    async with trio.open_nursery() as nursery:
        for key in keys:
            nursery.start_soon(one, key)
    return out
