"""Our orderly push consumer in its own process (so a test can kill -9 it), printing one JSON
line per message in the C++ driver's shape, with the monotonic clock (system-wide on Linux)
at the start and end of each listener call.

    python -m tests.interop.orderly_child NAMESRV GROUP TOPIC DELAY_MS
"""

from __future__ import annotations

import json
import sys
import time

import trio

from client.consumer import ConsumeStatus, PushConsumer
from remoting.body import ConsumeFromWhere


def emit(**event) -> None:
    print(json.dumps(event), flush=True)


async def main(namesrv: str, group: str, topic: str, delay_ms: int) -> None:
    async def listener(msgs):
        for msg in msgs:
            t0 = time.monotonic()
            await trio.sleep(delay_ms / 1000)
            emit(
                received=msg.keys,
                queue_id=msg.queue_id,
                queue_offset=msg.queue_offset,
                t0=t0,
                t1=time.monotonic(),
            )
        return ConsumeStatus.CONSUME_SUCCESS

    async with PushConsumer.open(
        namesrv,
        group,
        listener,
        {topic: "*"},
        orderly=True,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        instance_name=f"py-orderly-{time.monotonic_ns()}",
    ):
        emit(started=True)
        await trio.sleep_forever()


if __name__ == "__main__":
    trio.run(main, sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
