"""A transactional producer in its own process, for tests that kill it: it sends a half message
per key, never decides (its local transactions and its check answers stay UNKNOW), prints
``HALF <key>`` once each half is acknowledged and ``ALL SENT`` at the end, then waits to be
killed.

    python -m tests.integration.client.tx_child NAMESRV GROUP TOPIC KEY...
"""

from __future__ import annotations

import sys

import trio

from client.message import Message, SendStatus
from client.transaction import LocalTransactionState, TransactionProducer


class Undecided:
    def execute_local_transaction(self, msg, arg):
        return LocalTransactionState.UNKNOW

    def check_local_transaction(self, msg):
        print(f"CHECKED {msg.keys}", flush=True)
        return LocalTransactionState.UNKNOW


async def main(namesrv: str, group: str, topic: str, keys: list[str]) -> None:
    async with TransactionProducer.open(namesrv, group, Undecided()) as producer:
        for key in keys:
            result = await producer.send_message_in_transaction(
                Message(topic, key.encode(), keys=key)
            )
            assert result.send_result.status is SendStatus.SEND_OK, result
            print(f"HALF {key}", flush=True)
        print("ALL SENT", flush=True)
        await trio.sleep_forever()


if __name__ == "__main__":
    trio.run(main, sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:])
