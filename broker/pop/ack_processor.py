"""ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME (RocketMQ 5's AckMessageProcessor and
ChangeInvisibleTimeProcessor).

The request names the message by topic (the pop retry topic for a retried message), queueId
and queue offset, and carries the extraInfo it was popped with, which finds its checkpoint
(ck_info.py). An ack is an ack record in the revive log; changing the invisible time writes a
new one-message checkpoint from now and acks the old one. Orderly extraInfo (reviveQid 999) is
an orderly batch's (order_info.py): the ack moves the group's offset to the batch's first
unacked message, a change of invisible time moves the batch's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker.pop import ck_info
from broker.pop.ck_info import AckMsg, ExtraInfo, PopCheckPoint
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.errors import RequestError
from remoting.header_codec import encode_header_fields
from remoting.headers import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
)
from remoting.serde import decode_header

if TYPE_CHECKING:
    from broker.controller import BrokerController
    from remoting.connection import Connection


class AckMessageProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def register(self, server: Any) -> None:
        server.register(RequestCode.ACK_MESSAGE, self.ack)
        server.register(RequestCode.CHANGE_MESSAGE_INVISIBLETIME, self.change_invisible_time)

    def _checks(
        self, header: AckMessageRequestHeader | ChangeInvisibleTimeRequestHeader
    ) -> ExtraInfo | None:
        """The extraInfo, once topic, queue and offset are known; None: the offset is not in
        the queue (NO_MESSAGE)."""
        broker = self.broker
        topic_config = broker.topics.get(header.topic)
        if topic_config is None:
            raise RequestError(
                ResponseCode.TOPIC_NOT_EXIST,
                f"topic[{header.topic}] not exist, apply first please!",
            )
        if not 0 <= header.queue_id < topic_config.read_queue_nums:
            raise RequestError(
                ResponseCode.MESSAGE_ILLEGAL,
                f"queueId[{header.queue_id}] is illegal, topic:[{header.topic}] "
                f"topicConfig.readQueueNums:[{topic_config.read_queue_nums}]",
            )
        try:
            extra = ck_info.parse_extra_info(header.extra_info)
        except ValueError as exc:
            raise RequestError(ResponseCode.MESSAGE_ILLEGAL, str(exc)) from None
        if not extra.is_order and not 0 <= extra.revive_qid < broker.config.revive_queue_num:
            raise RequestError(
                ResponseCode.MESSAGE_ILLEGAL,
                f"extraInfo reviveQid {extra.revive_qid} is not a revive queue of this broker",
            )
        store = broker.store
        low = store.get_min_offset_in_queue(header.topic, header.queue_id)
        high = store.get_max_offset_in_queue(header.topic, header.queue_id)
        if not low <= header.offset <= high:
            return None
        return extra

    def _ack(self, header: Any, extra: ExtraInfo) -> bool:
        ack = AckMsg(
            ack_offset=header.offset,
            start_offset=extra.ck_queue_offset,
            group=header.consumer_group,
            topic=header.topic,
            queue_id=header.queue_id,
            pop_time=extra.pop_time,
            broker_name=extra.broker_name,
        )
        return self.broker.pop_revive.append_ack(ack, extra.revive_qid)

    def ack(self, connection: Connection, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(AckMessageRequestHeader, request.ext_fields)
        extra = self._checks(header)
        if extra is None:
            return request.make_response(
                ResponseCode.NO_MESSAGE,
                f"offset is illegal, key:{header.topic}@{header.queue_id}, commit:{header.offset}",
            )
        if extra.is_order:
            self._ack_orderly(header, extra)
            return request.make_response()
        if self._ack(header, extra):
            return request.make_response()
        return request.error_response(ResponseCode.SYSTEM_ERROR, "put ack msg error")

    def _ack_orderly(self, header: AckMessageRequestHeader, extra: ExtraInfo) -> None:
        broker = self.broker
        group, topic, queue_id = header.consumer_group, header.topic, header.queue_id
        next_offset = broker.pop_orders.ack((topic, group, queue_id), header.offset, extra.pop_time)
        if next_offset is None:
            return  # a stale ack (the batch was popped again since): nothing to move
        if next_offset > broker.offsets.query(group, topic, queue_id):
            broker.offsets.commit(group, topic, queue_id, next_offset)
        broker.pop_polling.notify(topic)  # the queue may be unblocked: waiting pops look again

    def change_invisible_time(
        self, connection: Connection, request: RemotingCommand
    ) -> RemotingCommand:
        header = decode_header(ChangeInvisibleTimeRequestHeader, request.ext_fields)
        extra = self._checks(header)
        if extra is None:
            return request.make_response(ResponseCode.NO_MESSAGE)
        broker = self.broker
        now = broker.clock()
        if extra.is_order:
            return self._change_orderly(request, header, extra, now)
        ck = PopCheckPoint(
            start_offset=header.offset,
            pop_time=now,
            invisible_time=header.invisible_time,
            queue_id=header.queue_id,
            topic=header.topic,
            group=header.consumer_group,
            broker_name=extra.broker_name,
            diffs=[0],
        )
        if broker.pop_revive.full or not broker.pop_revive.append_checkpoint(ck, extra.revive_qid):
            return request.error_response(ResponseCode.SYSTEM_ERROR, "put new ck error")
        self._ack(header, extra)
        fields = encode_header_fields(
            ChangeInvisibleTimeResponseHeader(
                pop_time=now, invisible_time=header.invisible_time, revive_qid=extra.revive_qid
            )
        )
        return request.make_response(ResponseCode.SUCCESS, None, fields)

    def _change_orderly(
        self,
        request: RemotingCommand,
        header: ChangeInvisibleTimeRequestHeader,
        extra: ExtraInfo,
        now: int,
    ) -> RemotingCommand:
        """The batch's invisible time moves; 5.x answers the batch's popTime, so later acks
        with the new extraInfo still match it."""
        key = (header.topic, header.consumer_group, header.queue_id)
        visible_at = now + header.invisible_time
        self.broker.pop_orders.change_invisible_time(key, extra.pop_time, visible_at)
        fields = encode_header_fields(
            ChangeInvisibleTimeResponseHeader(
                pop_time=extra.pop_time,
                invisible_time=visible_at - extra.pop_time,
                revive_qid=extra.revive_qid,
            )
        )
        return request.make_response(ResponseCode.SUCCESS, None, fields)
