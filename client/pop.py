"""Pop consumption, client side (pure): the POP_MESSAGE, ACK_MESSAGE and
CHANGE_MESSAGE_INVISIBLETIME requests as RocketMQ 5's client and Proxy build them, and each
popped message's extraInfo built from the response as 5.x's MQClientAPIImpl.processPopResponse
does (docs/pop.md). Send them with any RemotingClient."""

from __future__ import annotations

import attrs

from remoting import message as codec
from remoting import pop_wire
from remoting.codes import RequestCode
from remoting.command import RemotingCommand
from remoting.headers import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    PopMessageRequestHeader,
)
from remoting.serde import encode_header_fields


@attrs.frozen
class Popped:
    message: codec.MessageExt
    extra_info: str  # the POP_CK string, as the client builds it

    @property
    def extra(self) -> pop_wire.ExtraInfo:
        return pop_wire.parse_extra_info(self.extra_info)

    def real_topic(self, group: str) -> str:
        """The topic acks name: the pop retry topic for a retried message (5.x's getRealTopic)."""
        topic = self.message.topic
        return pop_wire.pop_retry_topic(topic, group) if self.extra.retry else topic


def pop_request(
    topic: str,
    group: str,
    *,
    queue_id: int = -1,
    max_nums: int = 32,
    invisible_ms: int = 60_000,
    poll_ms: int = 0,
    init_mode: int = 0,
    exp: str | None = None,
    order: bool = False,
) -> RemotingCommand:
    header = PopMessageRequestHeader(
        consumer_group=group,
        topic=topic,
        queue_id=queue_id,
        max_msg_nums=max_nums,
        invisible_time=invisible_ms,
        poll_time=poll_ms,
        born_time=0,
        init_mode=init_mode,
        exp_type="TAG" if exp else None,
        exp=exp,
        order=order,
    )
    return RemotingCommand.request(RequestCode.POP_MESSAGE, encode_header_fields(header))


def receipts(response: RemotingCommand, broker_name: str) -> list[Popped]:
    """The messages of a POP_MESSAGE response with their extraInfo, built from the response
    header as 5.x's MQClientAPIImpl.processPopResponse does."""
    if response.code != 0:
        return []
    starts = pop_wire.parse_offset_info(response.ext("startOffsetInfo"))
    out = []
    for msg in codec.decode_messages(response.body):
        if pop_wire.POP_CK in msg.properties:
            out.append(Popped(msg, msg.properties[pop_wire.POP_CK]))
            continue
        extra = pop_wire.ExtraInfo(
            ck_queue_offset=int(starts[(False, str(msg.queue_id))]),
            pop_time=int(response.ext("popTime")),
            invisible_time=int(response.ext("invisibleTime")),
            revive_qid=int(response.ext("reviveQid")),
            retry=False,
            broker_name=broker_name,
            queue_id=msg.queue_id,
            queue_offset=msg.queue_offset,
        )
        out.append(Popped(msg, extra.encode()))
    return out


def ack_request(popped: Popped, group: str) -> RemotingCommand:
    header = AckMessageRequestHeader(
        consumer_group=group,
        topic=popped.real_topic(group),
        queue_id=popped.extra.queue_id,
        extra_info=popped.extra_info,
        offset=popped.extra.queue_offset,
    )
    return RemotingCommand.request(RequestCode.ACK_MESSAGE, encode_header_fields(header))


def change_invisible_request(popped: Popped, group: str, invisible_ms: int) -> RemotingCommand:
    header = ChangeInvisibleTimeRequestHeader(
        consumer_group=group,
        topic=popped.real_topic(group),
        queue_id=popped.extra.queue_id,
        extra_info=popped.extra_info,
        offset=popped.extra.queue_offset,
        invisible_time=invisible_ms,
    )
    return RemotingCommand.request(
        RequestCode.CHANGE_MESSAGE_INVISIBLETIME, encode_header_fields(header)
    )
