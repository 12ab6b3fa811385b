"""PopReviveService: the checkpoints of popped messages, kept durable in the revive log, and
their redelivery once their invisible time has passed (RocketMQ 5's PopReviveService).

Every pop writes a checkpoint record (tag ``ck``) and every ack an ack record (tag ``ack``) to
``rmq_sys_REVIVE_LOG_<cluster>`` queue ``reviveQid``, JSON as 5.x writes them (ck_info.py).
The CommitLog is the one durable copy: the table here is rebuilt at start by replaying each
revive queue from its revive offset (the offset of group CID_RMQ_SYS_REVIVE_GROUP, persisted
with the other consumer offsets). The revive offset of a queue is its oldest checkpoint still
pending, so a restart replays exactly the records that still matter.

Simpler than 5.x, which routes checkpoints through its timer wheel and merges them in a
buffer: a checkpoint is appended once and held in memory (at most MAX_CHECKPOINTS) until all
its messages are acked or it is revived. A message whose checkpoint expires is put again to
the group's pop retry topic ``%RETRY%<group>_<topic>`` with reconsumeTimes + 1, or, once
reconsumeTimes reached the group's retryMaxTimes, to ``%DLQ%<group>``. A crash between a
revive and the next offset persist revives it again: at least once, never lost.
"""

from __future__ import annotations

import heapq
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

import trio

from broker.persist import ConfigPersistError
from broker.pop import ck_info
from broker.pop.ck_info import AckMsg, PopCheckPoint
from broker.store.types import MessageExtBrokerInner, PutMessageStatus
from remoting import constants as K
from remoting import message as codec
from remoting.message import MessageConst

if TYPE_CHECKING:
    from broker.controller import BrokerController

log = logging.getLogger(__name__)

# Checkpoints held at once: past this, pops are refused (SYSTEM_BUSY) until acks or revives
# make room, so a client popping with long invisible times cannot grow the table unbounded.
MAX_CHECKPOINTS = 200_000
RETRY_AFTER_FAILURE_MS = 10_000
IDLE_WAKE_S = 1.0
Key = tuple[str, str, int, int, int]
# Properties a revived message must not carry on: they would delay or route it again.
_DROPPED = ("DELAY", "TIMER_DELIVER_MS", "TIMER_DELAY_SEC", "TIMER_DELAY_MS", ck_info.POP_CK)


def _host(text: str) -> tuple[bytes, int]:
    host, _, port = text.rpartition(":")
    return codec.host_bytes(host.strip("[]")), int(port or 0)


class PopReviveService:
    name = "pop-revive"

    def __init__(self, broker: BrokerController, *, clock: Callable[[], int]) -> None:
        self.broker = broker
        self.clock = clock
        self.topic = ck_info.revive_topic(broker.config.broker_cluster_name)
        self.queue_num = broker.config.revive_queue_num
        self.table: dict[Key, PopCheckPoint] = {}
        self._due: list[tuple[int, int, Key]] = []  # (revive time, tie-break, key)
        self._seq = 0
        # per revive queue: its pending checkpoints' record offsets (the revive offset is
        # their minimum), and each checkpoint's revive queue
        self._pending: dict[int, dict[Key, int]] = {q: {} for q in range(self.queue_num)}
        self._qid_of: dict[Key, int] = {}
        self._wake = trio.Event()
        self.end_offset = 0  # the CommitLog end of the last revive record written (SYNC_FLUSH)

    # ------------------------------------------------------------------ the revive log

    def _append(self, queue_id: int, tag: str, body: bytes) -> int | None:
        """Append one revive record; its queue offset, or None when the store refused it."""
        config = self.broker.config
        msg = MessageExtBrokerInner(
            topic=self.topic,
            queue_id=queue_id,
            body=body,
            properties={MessageConst.TAGS: tag, MessageConst.WAIT: "false"},
            born_timestamp=self.clock(),
            born_host=(codec.host_bytes(config.broker_ip1), config.listen_port),
        )
        result = self.broker.store.put_message(msg)
        if result.status is not PutMessageStatus.PUT_OK or result.append is None:
            log.warning("revive log append refused: %s %s", result.status.name, result.remark)
            return None
        self.end_offset = result.append.end_offset
        return result.append.queue_offset

    def append_checkpoint(self, ck: PopCheckPoint, revive_qid: int) -> bool:
        offset = self._append(revive_qid, ck_info.CK_TAG, ck.to_json())
        if offset is None:
            return False
        ck.revive_offset = offset
        self._add(ck, revive_qid)
        return True

    def append_ack(self, ack: AckMsg, revive_qid: int) -> bool:
        if self._append(revive_qid, ck_info.ACK_TAG, ack.to_json()) is None:
            return False
        self._apply_ack(ack)
        return True

    @property
    def full(self) -> bool:
        return len(self.table) >= MAX_CHECKPOINTS

    # ------------------------------------------------------------------ the table

    def _add(self, ck: PopCheckPoint, revive_qid: int) -> None:
        self.table[ck.key] = ck
        self._pending[revive_qid][ck.key] = ck.revive_offset
        self._schedule(ck.revive_time, ck.key)
        self._qid_of[ck.key] = revive_qid

    def _schedule(self, at_ms: int, key: Key) -> None:
        self._seq += 1
        first = not self._due or at_ms < self._due[0][0]
        heapq.heappush(self._due, (at_ms, self._seq, key))
        if first:
            self._wake.set()

    def _apply_ack(self, ack: AckMsg) -> None:
        ck = self.table.get(ack.key)
        if ck is not None and ck.ack(ack.ack_offset) and ck.all_acked:
            self._remove(ck.key)

    def _remove(self, key: Key) -> None:
        self.table.pop(key, None)
        qid = self._qid_of.pop(key, None)
        if qid is not None:
            self._pending[qid].pop(key, None)
        # An acked checkpoint leaves its heap entry behind until its time: with long invisible
        # times those would outgrow the table (which MAX_CHECKPOINTS bounds), so rebuild.
        if len(self._due) > 2 * len(self.table) + 1024:
            self._due = [(ck.revive_time, i, k) for i, (k, ck) in enumerate(self.table.items())]
            heapq.heapify(self._due)

    def lowest_unacked(self, group: str, topic: str) -> dict[int, int]:
        """Per queue of ``topic``, the oldest offset ``group`` popped and has not acked."""
        out: dict[int, int] = {}
        for ck in self.table.values():
            if ck.group == group and ck.topic == topic:
                low = min(ck.unacked_offsets(), default=None)
                if low is not None and low < out.get(ck.queue_id, low + 1):
                    out[ck.queue_id] = low
        return out

    # ------------------------------------------------------------------ start: replay

    def load(self) -> None:
        """Rebuild the table from the revive log (the store is recovered and dispatched)."""
        store, offsets = self.broker.store, self.broker.offsets
        replayed = 0
        for qid in range(self.queue_num):
            cq = store.find_consume_queue(self.topic, qid)
            if cq is None:
                continue
            offset = max(offsets.query(ck_info.REVIVE_GROUP, self.topic, qid), cq.min_queue_offset)
            for queue_offset in range(offset, cq.max_queue_offset):
                unit = cq.unit(queue_offset)
                record = None if unit is None else store.look_message_by_offset(unit[0], unit[1])
                if record is None:
                    continue
                self._replay(codec.decode_message(record), qid, queue_offset)
                replayed += 1
        log.info("pop revive log replayed: records=%d checkpoints=%d", replayed, len(self.table))

    def _replay(self, msg: codec.MessageExt, qid: int, queue_offset: int) -> None:
        try:
            if msg.tags == ck_info.CK_TAG:
                ck = ck_info.parse_checkpoint(msg.body)
                ck.revive_offset = queue_offset
                self._add(ck, qid)
            elif msg.tags == ck_info.ACK_TAG:
                self._apply_ack(ck_info.parse_ack(msg.body))
        except ValueError as exc:
            log.warning("revive log record %d of queue %d skipped: %s", queue_offset, qid, exc)

    # ------------------------------------------------------------------ revive

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        self.load()
        task_status.started()
        while True:
            self._wake = trio.Event()
            next_due = self.revive_due()
            wait_s = IDLE_WAKE_S if next_due is None else max(0, next_due - self.clock()) / 1000
            with trio.move_on_after(min(wait_s, IDLE_WAKE_S)):
                await self._wake.wait()

    def revive_due(self) -> int | None:
        """Revive every expired checkpoint; the time of the next one (ms), if any."""
        now = self.clock()
        revived = False
        while self._due and self._due[0][0] <= now:
            _, _, key = heapq.heappop(self._due)
            ck = self.table.get(key)
            if ck is None:  # acked in full since
                continue
            if self._revive(ck):
                self._remove(key)
                revived = True
            else:
                self._schedule(now + RETRY_AFTER_FAILURE_MS, key)
                break
        if revived or self._due:
            self.commit_revive_offsets()
        return self._due[0][0] if self._due else None

    def commit_revive_offsets(self) -> None:
        for qid, pending in self._pending.items():
            cq = self.broker.store.find_consume_queue(self.topic, qid)
            if cq is None:
                continue
            offset = min(pending.values()) if pending else cq.max_queue_offset
            self.broker.offsets.commit(ck_info.REVIVE_GROUP, self.topic, qid, offset)

    def _revive(self, ck: PopCheckPoint) -> bool:
        """Put every unacked message of ``ck`` again; False when the store refused one."""
        store = self.broker.store
        cq = store.find_consume_queue(ck.topic, ck.queue_id)
        for queue_offset in ck.unacked_offsets():
            unit = None
            if cq is not None and cq.min_queue_offset <= queue_offset < cq.max_queue_offset:
                unit = cq.unit(queue_offset)
            record = None if unit is None else store.look_message_by_offset(unit[0], unit[1])
            if record is None:
                log.warning("pop revive: %s@%d:%d is gone", ck.topic, ck.queue_id, queue_offset)
                continue
            if not self._put_again(ck, codec.decode_message(record, decompress=False)):
                return False
            ck.ack(queue_offset)  # a later failure must not put this one twice
        return True

    def _put_again(self, ck: PopCheckPoint, msg: codec.MessageExt) -> bool:
        broker = self.broker
        group = broker.groups.find(ck.group)
        max_times = group.retry_max_times if group is not None else 16
        properties = {k: v for k, v in msg.properties.items() if k not in _DROPPED}
        properties[MessageConst.WAIT] = "false"
        if msg.reconsume_times == 0 or ck_info.FIRST_POP_TIME not in properties:
            properties[ck_info.FIRST_POP_TIME] = str(ck.pop_time)
        if msg.reconsume_times >= max_times:
            topic = K.dlq_topic(ck.group)
            properties.setdefault(
                MessageConst.RETRY_TOPIC, ck_info.normal_topic(ck.topic, ck.group)
            )
            log.info("pop: message %s to %s after %d retries", msg.msg_id, topic, max_times)
        elif ck.topic.startswith(K.RETRY_GROUP_TOPIC_PREFIX):
            topic = ck.topic
        else:
            topic = ck_info.pop_retry_topic(ck.topic, ck.group)
        try:
            broker.topics.create_in_send_back(topic, 1)
        except ConfigPersistError as exc:  # a full disk: retried later, as a refused put
            log.warning("pop revive: cannot create %s: %s", topic, exc.remark)
            return False
        if broker.offsets.query(ck.group, topic, 0) < 0:
            broker.offsets.commit(ck.group, topic, 0, 0)
        result = broker.store.put_message(
            MessageExtBrokerInner(
                topic=topic,
                queue_id=0,
                body=msg.body,
                properties=properties,
                flag=msg.flag,
                sys_flag=msg.sys_flag & ~(codec.BORNHOST_V6_FLAG | codec.STOREHOSTADDRESS_V6_FLAG),
                born_timestamp=msg.born_timestamp,
                born_host=_host(msg.born_host),
                reconsume_times=msg.reconsume_times + 1,
            )
        )
        if result.status is not PutMessageStatus.PUT_OK:
            log.warning("pop revive: put to %s refused: %s", topic, result.status.name)
            return False
        return True
