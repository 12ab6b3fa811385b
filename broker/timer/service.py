"""TimerMessageService: parks 5.x timer messages and delivers each when due.

A timer message is stored in ``rmq_sys_wheel_timer`` queue 0 (transform.py). This service reads
that queue and keeps every message not yet delivered in a heap by due time; when one is due it
is put on its real topic and queue. A simpler design than 5.x's timer log + wheel files: the
CommitLog record is the one durable copy, and the heap (MAX_PENDING entries at most; further
timer sends are refused SYSTEM_BUSY) is rebuilt at start from the progress file
``config/timerProgress.json``:

- ``lowOffset``: the oldest queue offset not yet delivered (the replay starts there);
- ``readOffset`` and ``deliveredUpTo``: every message below readOffset due before
  deliveredUpTo was delivered, so the replay skips those.

Messages are delivered in due order, so this holds at every step; a failed delivery (full disk)
lowers deliveredUpTo to its due time. A crash delivers again at most what was delivered since
the last progress write (one flushConsumerOffsetInterval): at least once, never lost.

A slave delivers nothing: it copies its master's progress every 3 s (GET_TIMER_CHECK_POINT,
broker/slave/), so once promoted it delivers again only what the master delivered in the last
sync period before it died, as RocketMQ 5's slave does with its copied lastReadTimeMs.
"""

from __future__ import annotations

import heapq
import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

import trio

from broker.persist import JsonConfigFile
from broker.schedule import restore
from broker.store.types import MessageExtBrokerInner, PutMessageStatus
from broker.timer import transform
from broker.timer.checkpoint import TimerCheckpoint
from broker.timer.transform import TIMER_TOPIC, TimerRefused
from remoting import message as codec
from remoting.codes import ResponseCode
from remoting.errors import RequestError
from remoting.message import MessageConst

if TYPE_CHECKING:
    from broker.store.config import MessageStoreConfig
    from broker.store.message_store import DefaultMessageStore

log = logging.getLogger(__name__)

MAX_PENDING = 1_000_000  # ~100 B each in the heaps
IDLE_WAKE_S = 1.0
RETRY_AFTER_FAILURE_S = 1.0


class TimerProgress:
    """The three numbers a restart needs (see the module docstring), persisted as JSON."""

    def __init__(self, file: JsonConfigFile) -> None:
        self.file = file
        self.low_offset = 0
        self.read_offset = 0
        self.delivered_up_to = 0

    def encode(self, pretty: bool = True) -> str:
        return json.dumps(
            {
                "lowOffset": self.low_offset,
                "readOffset": self.read_offset,
                "deliveredUpTo": self.delivered_up_to,
            },
            indent=4 if pretty else None,
        )

    def load(self) -> None:
        data = self.file.load()
        if not isinstance(data, dict):
            return
        values = [data.get(k) for k in ("lowOffset", "readOffset", "deliveredUpTo")]
        if all(isinstance(v, int) and v >= 0 for v in values):
            self.low_offset, self.read_offset, self.delivered_up_to = values
        else:
            log.error("%s has bad values %s: replaying the whole timer queue", self.file.what, data)

    async def persist(self) -> None:
        await self.file.persist(self.encode())

    def checkpoint(self, now_ms: int) -> TimerCheckpoint:
        """What GET_TIMER_CHECK_POINT answers (checkpoint.py maps the fields)."""
        return TimerCheckpoint(
            last_read_time_ms=self.delivered_up_to,
            last_timer_queue_offset=self.low_offset,
            master_timer_queue_offset=self.read_offset,
            timestamp=now_ms,
        )

    def adopt(self, checkpoint: TimerCheckpoint) -> None:
        """A slave takes its master's progress: promoted, it resumes where the master was."""
        self.delivered_up_to = checkpoint.last_read_time_ms
        self.low_offset = checkpoint.last_timer_queue_offset
        self.read_offset = checkpoint.master_timer_queue_offset

    def persist_sync(self) -> None:
        self.file.persist_sync(self.encode())


class TimerMessageService:
    name = "timer"

    def __init__(
        self,
        store: DefaultMessageStore,
        store_config: MessageStoreConfig,
        progress: TimerProgress,
        *,
        clock: Callable[[], int],
    ) -> None:
        self.store = store
        self.config = store_config
        self.progress = progress
        self.clock = clock
        self._due: list[tuple[int, int, int, int]] = []  # (due ms, queue offset, phys, size)
        self._undelivered: list[int] = []  # queue offsets, a heap
        self._delivered: set[int] = set()  # delivered, still above the heap's minimum
        self._read = 0
        self._arrived = trio.Event()

    # ------------------------------------------------------------------ the send hook

    def park(self, msg: MessageExtBrokerInner) -> None:
        """Called by the send processor for a message with timer properties: re-address it to
        the timer queue, or refuse it (RequestError)."""
        config = self.config
        if codec.transaction_type(msg.sys_flag) not in (
            codec.TRANSACTION_NOT_TYPE,
            codec.TRANSACTION_COMMIT_TYPE,
        ):
            return
        if not config.timer_wheel_enable:
            raise RequestError(
                ResponseCode.MESSAGE_ILLEGAL,
                "accurate timer message is not enabled, timerWheelEnable is false",
            )
        try:
            due = transform.park(
                msg.properties,
                msg.topic,
                msg.queue_id,
                now_ms=self.clock(),
                precision_ms=config.timer_precision_ms,
                max_delay_sec=config.timer_max_delay_sec,
            )
        except TimerRefused as exc:
            raise RequestError(ResponseCode.MESSAGE_ILLEGAL, str(exc)) from None
        if due is None:
            return
        if len(self._due) >= MAX_PENDING:
            raise RequestError(ResponseCode.SYSTEM_BUSY, "too many timer messages pending")
        msg.properties.pop(MessageConst.DELAY, None)  # the timer decides, not a delay level
        msg.topic, msg.queue_id = TIMER_TOPIC, 0

    def notify_arrival(self) -> None:
        self._arrived.set()

    @property
    def pending(self) -> int:
        return len(self._due)

    # ------------------------------------------------------------------ reading the queue

    def load(self) -> None:
        progress = self.progress
        progress.load()
        cq = self.store.find_consume_queue(TIMER_TOPIC, 0)
        if cq is None:
            self._read = 0
            return
        # Not past the queue's end: a promoted slave may lack the last records its master's
        # progress counted (ASYNC replication), and its new timers are stored from its own end.
        self._read = min(max(progress.low_offset, cq.min_queue_offset), cq.max_queue_offset)
        skipped = self._read_new(skip_below=progress.read_offset, skip_due=progress.delivered_up_to)
        log.info("timer queue replayed: pending=%d skipped as delivered=%d", self.pending, skipped)

    def _read_new(self, skip_below: int = 0, skip_due: int = 0) -> int:
        cq = self.store.find_consume_queue(TIMER_TOPIC, 0)
        if cq is None:
            return 0
        skipped = 0
        while self._read < cq.max_queue_offset:
            offset = self._read
            self._read += 1
            unit = cq.unit(offset)
            record = None if unit is None else self.store.look_message_by_offset(unit[0], unit[1])
            if record is None:
                continue
            try:
                due = int(
                    codec.decode_message(record, decompress=False).properties[
                        transform.TIMER_OUT_MS
                    ]
                )
            except (KeyError, ValueError):
                log.warning("timer queue offset %d has no TIMER_OUT_MS: delivered now", offset)
                due = 0
            if offset < skip_below and due < skip_due:
                skipped += 1
                continue
            heapq.heappush(self._due, (due, offset, unit[0], unit[1]))
            heapq.heappush(self._undelivered, offset)
        return skipped

    # ------------------------------------------------------------------ delivering

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        self.load()
        task_status.started()
        while True:
            self._arrived = trio.Event()
            self._read_new()
            wait_s = self.deliver_due()
            with trio.move_on_after(min(wait_s, IDLE_WAKE_S)):
                await self._arrived.wait()

    def deliver_due(self) -> float:
        """Deliver every due message; seconds until the next is due."""
        precision = self.config.timer_precision_ms
        progress = self.progress
        now = self.clock()
        while self._due and self._due[0][0] + precision <= now:
            due, offset, phys, size = self._due[0]
            if not self._deliver(phys, size):
                progress.delivered_up_to = min(progress.delivered_up_to, due)
                self._update_progress()
                return RETRY_AFTER_FAILURE_S
            heapq.heappop(self._due)
            self._delivered.add(offset)
            progress.delivered_up_to = max(progress.delivered_up_to, due)
        self._update_progress()
        if not self._due:
            return IDLE_WAKE_S
        return max(0, self._due[0][0] + precision - now) / 1000

    def _update_progress(self) -> None:
        while self._undelivered and self._undelivered[0] in self._delivered:
            self._delivered.discard(heapq.heappop(self._undelivered))
        self.progress.low_offset = self._undelivered[0] if self._undelivered else self._read
        self.progress.read_offset = self._read

    def _deliver(self, phys: int, size: int) -> bool:
        record = self.store.look_message_by_offset(phys, size)
        if record is None:
            log.warning("timer message at %d is gone", phys)
            return True
        msg = restore(record)
        result = self.store.put_message(msg)
        if result.status is not PutMessageStatus.PUT_OK:
            log.warning("timer: delivery to %s refused: %s", msg.topic, result.status.name)
            return False
        return True
