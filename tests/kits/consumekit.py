"""Consuming in tests with our own push consumer: from the first offset until a condition on
what arrived holds, or fail after a deadline."""

from __future__ import annotations

from collections.abc import Callable

import trio

from client.consumer import ConsumeStatus, PushConsumer
from remoting.body import ConsumeFromWhere
from remoting.message import MessageExt


async def consume_until(
    namesrv: str,
    group: str,
    topic: str,
    enough: Callable[[list[MessageExt]], bool],
    *,
    timeout_s: float = 60.0,
) -> list[MessageExt]:
    """Every message delivered to ``group`` on ``topic`` until ``enough(delivered)``."""
    delivered: list[MessageExt] = []
    done = trio.Event()

    def listener(msgs: list[MessageExt]) -> ConsumeStatus:
        delivered.extend(msgs)
        if enough(delivered):
            done.set()
        return ConsumeStatus.CONSUME_SUCCESS

    async with PushConsumer.open(
        namesrv,
        group,
        listener,
        {topic: "*"},
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    ):
        with trio.fail_after(timeout_s):
            await done.wait()
    return delivered


def keys_of(messages: list[MessageExt]) -> set[str]:
    return {m.keys for m in messages}
