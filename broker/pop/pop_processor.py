"""POP_MESSAGE and NOTIFICATION (RocketMQ 5's PopMessageProcessor / NotificationProcessor).

A pop reads from the group's committed offset of each queue, writes a checkpoint of what it
took to the revive log (revive.py), commits the offset past it, and answers the stored records
with ``startOffsetInfo`` / ``msgOffsetInfo`` from which the client builds each message's
extraInfo (ck_info.py). Messages of the group's pop retry topic are answered re-encoded with the
original topic and their POP_CK property set, as 5.x does. One pop in five reads the retry
topic first; otherwise it is read when the topic left the batch short. Nothing found: the pop
waits up to pollTime for an arrival (polling.py), then answers POLLING_TIMEOUT.
An orderly pop (order=true) reads no retry topic, writes no checkpoint (reviveQid 999) and
leaves the offset where it is; the queue stays blocked for the group until its batch is acked
or invisible again (order_info.py), and orderCountInfo says how often each was consumed.
"""

from __future__ import annotations

import random
import struct
from typing import TYPE_CHECKING, Any

import trio

from broker.pop import ck_info
from broker.pop.checks import pop_checks
from broker.pop.ck_info import PopCheckPoint
from broker.store.config import FlushDiskType
from broker.store.layout import MAX_TOPIC_BYTES
from broker.store.types import GetMessageStatus, PutMessageStatus
from broker.transaction import encode_record
from remoting import constants as K
from remoting import message as codec
from remoting import names
from remoting.codes import ResponseCode
from remoting.command import RemotingCommand
from remoting.errors import RequestError
from remoting.header_codec import encode_header_fields
from remoting.headers import (
    PopMessageRequestHeader,
    PopMessageResponseHeader,
)
from remoting.record_layout import QUEUE_OFFSET_POS
from remoting.serde import decode_header

if TYPE_CHECKING:
    from broker.controller import BrokerController
    from remoting.connection import Connection

_QUEUE_OFFSET = struct.Struct(">q")
_RESET = (
    GetMessageStatus.OFFSET_TOO_SMALL,
    GetMessageStatus.OFFSET_OVERFLOW_BADLY,
    GetMessageStatus.OFFSET_FOUND_NULL,
)
TIMEOUT_SLACK_MS = 500  # PopMessageRequestHeader.isTimeoutTooMuch
INIT_MODE_MIN = 0


class _Batch:
    """What one pop collected across queues."""

    def __init__(self, max_nums: int) -> None:
        self.max_nums = max_nums
        self.buffers: list[Any] = []
        self.start_offset_info: list[str] = []
        self.msg_offset_info: list[str] = []
        self.rest_num = 0
        self.order_count_info: list[str] = []

    @property
    def room(self) -> int:
        return self.max_nums - len(self.buffers)


class PopMessageProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker
        self._ck_number = 0

    def register(self, server: Any) -> None:
        from remoting.codes import RequestCode

        server.register(RequestCode.POP_MESSAGE, self.pop)

    # ------------------------------------------------------------------ checks

    @staticmethod
    def _derived_topics(header: PopMessageRequestHeader) -> str:
        """The group's pop retry topic; refused when it or the group's DLQ could not be
        stored (a group name may be 255 characters, a record's topic 127 bytes): a message
        popped now could then never be retried."""
        retry_topic = ck_info.pop_retry_topic(header.topic, header.consumer_group)
        for derived in (retry_topic, K.dlq_topic(header.consumer_group)):
            problem = names.topic_problem(derived)
            if problem is None and len(derived.encode()) > MAX_TOPIC_BYTES:
                problem = f"longer than the {MAX_TOPIC_BYTES} bytes a stored record holds"
            if problem is not None:
                raise RequestError(
                    ResponseCode.SYSTEM_ERROR, f"pop retry/DLQ topic {derived[:40]}...: {problem}"
                )
        return retry_topic

    def _filter(self, header: PopMessageRequestHeader) -> Any:
        pull = self.broker.pull_processor
        return pull.message_filter(
            header.consumer_group,
            header.topic,
            header.exp or "*",
            header.exp_type or "TAG",
            ResponseCode.SUBSCRIPTION_PARSE_FAILED,
            "parse the consumer's subscription failed",
        )

    # ------------------------------------------------------------------ POP_MESSAGE

    async def pop(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(PopMessageRequestHeader, request.ext_fields)
        broker = self.broker
        now = broker.clock()
        born_time = header.born_time or now
        if now - born_time - header.poll_time > TIMEOUT_SLACK_MS:
            raise RequestError(
                ResponseCode.POLLING_TIMEOUT,
                f"the broker[{broker.config.broker_ip1}] pop message is timeout too much",
            )
        if not 0 < header.max_msg_nums <= ck_info.MAX_BATCH:
            raise RequestError(
                ResponseCode.SYSTEM_ERROR,
                f"the broker[{broker.config.broker_ip1}] pop message's num is greater than 32"
                if header.max_msg_nums > 0
                else f"maxMsgNums {header.max_msg_nums} must be 1 to 32",
            )
        topic_config = pop_checks(self.broker, header.consumer_group, header.topic, header.queue_id)
        message_filter = self._filter(header)
        retry_topic = self._derived_topics(header)
        deadline = trio.current_time() + max(0, born_time + header.poll_time - now) / 1000
        while True:
            if broker.pop_revive.full:
                raise RequestError(ResponseCode.SYSTEM_BUSY, "too many pop checkpoints in flight")
            response = self._pop_once(request, header, topic_config, message_filter, retry_topic)
            remaining = deadline - trio.current_time()
            if response.code == ResponseCode.SUCCESS:
                return await self._durable(request, response)
            if remaining <= 0:
                return response
            if broker.pop_polling.full:
                response.code = ResponseCode.POLLING_FULL
                return response
            await broker.pop_polling.wait((header.topic, retry_topic), remaining)

    async def _durable(
        self, request: RemotingCommand, response: RemotingCommand
    ) -> RemotingCommand:
        """SYNC_FLUSH: the messages go out once their checkpoints are on disk (else a power
        loss could forget messages the group's offset has passed)."""
        broker = self.broker
        if broker.store_config.flush_disk_type is FlushDiskType.SYNC_FLUSH:
            status = await broker.store.wait_flushed(broker.pop_revive.end_offset)
            if status is not PutMessageStatus.PUT_OK:
                return request.error_response(ResponseCode.SYSTEM_ERROR, status.name)
        return response

    def _pop_once(
        self,
        request: RemotingCommand,
        header: PopMessageRequestHeader,
        topic_config: Any,
        message_filter: Any,
        retry_topic: str,
    ) -> RemotingCommand:
        broker = self.broker
        revive_qid = self._ck_number % broker.config.revive_queue_num
        self._ck_number += 1
        if header.order:
            revive_qid = ck_info.ORDER_REVIVE_QID
        pop_time = broker.clock()
        batch = _Batch(header.max_msg_nums)
        start = random.randrange(100)
        retry_config = None if header.order else broker.topics.get(retry_topic)
        retry_first = start % 5 == 0
        args = (header, revive_qid, pop_time, batch)
        if retry_first and retry_config is not None:
            for i in range(retry_config.read_queue_nums):
                self._pop_queue(
                    *args, retry_topic, (start + i) % retry_config.read_queue_nums, None
                )
        if header.queue_id < 0:
            n = topic_config.read_queue_nums
            for i in range(n):
                self._pop_queue(*args, header.topic, (start + i) % n, message_filter)
        else:
            self._pop_queue(*args, header.topic, header.queue_id, message_filter)
        if not retry_first and retry_config is not None and batch.room > 0:
            for i in range(retry_config.read_queue_nums):
                self._pop_queue(
                    *args, retry_topic, (start + i) % retry_config.read_queue_nums, None
                )
        response_header = PopMessageResponseHeader(
            pop_time=pop_time,
            invisible_time=header.invisible_time,
            revive_qid=revive_qid,
            rest_num=batch.rest_num,
            start_offset_info=";".join(batch.start_offset_info),
            msg_offset_info=";".join(batch.msg_offset_info),
            order_count_info=";".join(batch.order_count_info) if header.order else None,
        )
        fields = encode_header_fields(response_header)
        if batch.buffers:
            broker.stats.on_get(
                header.topic,
                header.consumer_group,
                broker.config.broker_cluster_name,
                len(batch.buffers),
                sum(len(b) for b in batch.buffers),
            )
            return request.make_response(
                ResponseCode.SUCCESS, "FOUND", fields, b"".join(batch.buffers)
            )
        return request.make_response(ResponseCode.POLLING_TIMEOUT, "NO_MESSAGE_IN_QUEUE", fields)

    def _pop_queue(
        self,
        header: PopMessageRequestHeader,
        revive_qid: int,
        pop_time: int,
        batch: _Batch,
        topic: str,
        queue_id: int,
        message_filter: Any,
    ) -> None:
        broker = self.broker
        store, group = broker.store, header.consumer_group
        is_retry = topic != header.topic
        offset = self._pop_offset(group, topic, queue_id, header.init_mode)
        order_key = (topic, group, queue_id)
        if batch.room <= 0 or (
            header.order and broker.pop_orders.blocked(order_key, header.attempt_id, pop_time)
        ):
            batch.rest_num += max(0, store.get_max_offset_in_queue(topic, queue_id) - offset)
            return
        if is_retry:
            message_filter = broker.pull_processor.message_filter(
                group, topic, "*", "TAG", ResponseCode.SUBSCRIPTION_PARSE_FAILED, ""
            )
        result = store.get_message(group, topic, queue_id, offset, batch.room, message_filter)
        if result.status in _RESET:
            offset = result.next_begin_offset
            broker.offsets.commit(group, topic, queue_id, offset)
            result = store.get_message(group, topic, queue_id, offset, batch.room, message_filter)
        batch.rest_num += max(0, result.max_queue_offset - result.next_begin_offset)
        if not result.buffers:
            if result.next_begin_offset > offset:  # filtered out: nobody will ack those
                broker.offsets.commit(group, topic, queue_id, result.next_begin_offset)
            return
        queue_offsets = [_QUEUE_OFFSET.unpack_from(b, QUEUE_OFFSET_POS)[0] for b in result.buffers]
        if header.order:
            self._orderly(header, batch, order_key, pop_time, offset, queue_offsets)
            batch.buffers.extend(result.buffers)
            return
        ck = PopCheckPoint(
            start_offset=offset,
            pop_time=pop_time,
            invisible_time=header.invisible_time,
            queue_id=queue_id,
            topic=topic,
            group=group,
            broker_name=broker.config.broker_name,
            diffs=[q - offset for q in queue_offsets],
        )
        if not broker.pop_revive.append_checkpoint(ck, revive_qid):
            return  # the store refused the checkpoint: hand out nothing we cannot revive
        broker.offsets.commit(group, topic, queue_id, result.next_begin_offset)
        batch.start_offset_info.append(ck_info.offset_info_item(is_retry, queue_id, offset))
        batch.msg_offset_info.append(
            ck_info.offset_info_item(is_retry, queue_id, ",".join(map(str, queue_offsets)))
        )
        if not is_retry:
            batch.buffers.extend(result.buffers)
            return
        for buffer, queue_offset in zip(result.buffers, queue_offsets, strict=True):
            batch.buffers.append(self._as_original(buffer, header, ck, revive_qid, queue_offset))

    def _orderly(
        self,
        header: PopMessageRequestHeader,
        batch: _Batch,
        key: tuple[str, str, int],
        pop_time: int,
        offset: int,
        queue_offsets: list[int],
    ) -> None:
        """An orderly batch: recorded (the queue blocks), no checkpoint, offset kept."""
        queue_id = key[2]
        counts = self.broker.pop_orders.update(
            key, header.attempt_id, pop_time, header.invisible_time, queue_offsets
        )
        batch.start_offset_info.append(ck_info.offset_info_item(False, queue_id, offset))
        batch.msg_offset_info.append(
            ck_info.offset_info_item(False, queue_id, ",".join(map(str, queue_offsets)))
        )
        for queue_offset in queue_offsets:
            # ExtraInfoUtil.buildQueueOffsetOrderCountInfo: "0 qo<queueId>%<offset> <count>"
            item = f"{ck_info.NORMAL}{ck_info.SEP}qo{queue_id}%{queue_offset}"
            batch.order_count_info.append(f"{item}{ck_info.SEP}{counts[queue_offset]}")
        # and the queue's least count, for older SDKs that look it up by queueId
        batch.order_count_info.append(
            ck_info.offset_info_item(False, queue_id, min(counts.values()))
        )

    def _as_original(
        self,
        buffer: Any,
        header: PopMessageRequestHeader,
        ck: PopCheckPoint,
        revive_qid: int,
        queue_offset: int,
    ) -> bytes:
        """A retry message as 5.x answers it: the original topic, POP_CK set."""
        msg = codec.decode_message(buffer, decompress=False)
        extra = ck_info.ExtraInfo(
            ck_queue_offset=ck.start_offset,
            pop_time=ck.pop_time,
            invisible_time=ck.invisible_time,
            revive_qid=revive_qid,
            retry=True,
            broker_name=ck.broker_name,
            queue_id=ck.queue_id,
            queue_offset=queue_offset,
        )
        msg.properties.setdefault(ck_info.POP_CK, extra.encode())
        return encode_record(msg, header.topic, msg.queue_id)

    def _pop_offset(self, group: str, topic: str, queue_id: int, init_mode: int) -> int:
        broker = self.broker
        offset = broker.offsets.query(group, topic, queue_id)
        if offset >= 0:
            return offset
        store = broker.store
        if init_mode == INIT_MODE_MIN:
            return store.get_min_offset_in_queue(topic, queue_id)
        if (
            broker.config.init_pop_offset_by_check_msg_in_mem
            and store.get_min_offset_in_queue(topic, queue_id) <= 0
            and store.check_in_mem_by_consume_offset(topic, queue_id, 0)
        ):
            offset = 0
        else:
            offset = max(0, store.get_max_offset_in_queue(topic, queue_id) - 1)
        broker.offsets.commit(group, topic, queue_id, offset)
        return offset
