"""ScheduleMessageService: delivers delayed messages (and consumer retries) when they are due.

A message with DELAY=level is stored in SCHEDULE_TOPIC_XXXX queue ``level - 1`` with its due
time as the ConsumeQueue tags code. One task per level follows that queue in order: messages
of one level become due in store order, so each task sleeps until its head is due, then puts
the message back on its real topic and queue and advances the level's offset, which is
persisted in ``delayOffset.json`` (a crash delivers at least once, never loses).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

import trio

from broker.offsets import DelayOffsetTable
from broker.store.types import MessageExtBrokerInner, PutMessageStatus
from remoting import constants as K
from remoting import message as codec
from remoting.message import MessageConst

if TYPE_CHECKING:
    from broker.store.message_store import DefaultMessageStore

log = logging.getLogger(__name__)

RETRY_AFTER_FAILURE_S = 10.0
IDLE_CHECK_S = 1.0


class Wait(NamedTuple):
    seconds: float
    # False after a failed delivery: new arrivals must not retry the head (and log it again)
    # at their own pace
    on_arrival: bool = True


def _host(text: str) -> tuple[bytes, int]:
    host, _, port = text.rpartition(":")
    return codec.host_bytes(host.strip("[]")), int(port)


def restore(record: memoryview) -> MessageExtBrokerInner:
    """The parked record as a message for its real topic and queue (Java's messageTimeup)."""
    msg = codec.decode_message(record, decompress=False)
    properties = dict(msg.properties)
    properties.pop(MessageConst.DELAY, None)
    properties[MessageConst.WAIT] = "false"
    topic = properties.get(MessageConst.REAL_TOPIC, msg.topic)
    queue_id = int(properties.get(MessageConst.REAL_QID, "0"))
    return MessageExtBrokerInner(
        topic=topic,
        queue_id=queue_id,
        body=msg.body,
        properties=properties,
        flag=msg.flag,
        # the host IPv6 bits follow the addresses of the new record (this broker may not be the
        # one that parked it: a promoted slave)
        sys_flag=msg.sys_flag & ~(codec.BORNHOST_V6_FLAG | codec.STOREHOSTADDRESS_V6_FLAG),
        born_timestamp=msg.born_timestamp,
        born_host=_host(msg.born_host),
        reconsume_times=msg.reconsume_times,
        prepared_transaction_offset=msg.prepared_transaction_offset,
    )


class ScheduleMessageService:
    def __init__(
        self,
        store: DefaultMessageStore,
        offsets: DelayOffsetTable,
        levels_ms: list[int],
        *,
        clock: Callable[[], int],
    ) -> None:
        self.store = store
        self.offsets = offsets
        self.levels_ms = levels_ms
        self.clock = clock
        self._arrived = {level: trio.Event() for level in range(1, len(levels_ms) + 1)}

    def notify_arrival(self, queue_id: int) -> None:
        """Dispatch saw a new parked message on queue ``queue_id`` (level ``queue_id + 1``)."""
        event = self._arrived.get(queue_id + 1)
        if event is not None:
            event.set()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            for level in self._arrived:
                nursery.start_soon(self._deliver_level, level)
            task_status.started()

    async def _deliver_level(self, level: int) -> None:
        queue_id = level - 1
        while True:
            self._arrived[level] = trio.Event()
            wait = self.deliver_due(level, queue_id)
            if not wait.on_arrival:
                await trio.sleep(wait.seconds)
                continue
            with trio.move_on_after(wait.seconds):
                await self._arrived[level].wait()

    def deliver_due(self, level: int, queue_id: int) -> Wait:
        """Deliver every due message of a level; return how long to wait for the next."""
        consume_queue = self.store.find_consume_queue(K.SCHEDULE_TOPIC, queue_id)
        if consume_queue is None:
            return Wait(IDLE_CHECK_S)
        offset = max(self.offsets.get(level), consume_queue.min_queue_offset)
        while True:
            unit = consume_queue.unit(offset) if offset < consume_queue.max_queue_offset else None
            if unit is None:
                self.offsets.set(level, offset)
                return Wait(IDLE_CHECK_S)
            phys_offset, size, due = unit
            now = self.clock()
            # A due time further out than the level's span was written by a clock that has
            # since gone back: deliver it now, as Java's correctDeliverTimestamp does.
            if due > now + self.levels_ms[level - 1]:
                due = now
            if due > now:
                self.offsets.set(level, offset)
                return Wait((due - now) / 1000)
            record = self.store.look_message_by_offset(phys_offset, size)
            if record is not None:
                result = self.store.put_message(restore(record))
                if result.status is not PutMessageStatus.PUT_OK:
                    # the store's trouble (a full disk) or the operator's (a smaller
                    # maxMessageSize since): retried, as Java does, every 10 s
                    log.warning(
                        "delay level %d: cannot deliver the message at %d, retrying in %g s: %s %s",
                        level,
                        phys_offset,
                        RETRY_AFTER_FAILURE_S,
                        result.status.name,
                        result.remark,
                    )
                    self.offsets.set(level, offset)
                    return Wait(RETRY_AFTER_FAILURE_S, on_arrival=False)
            offset += 1
