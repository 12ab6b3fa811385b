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


def popped_messages(
    response: RemotingCommand, broker_name: str
) -> list[tuple[codec.MessageExt, pop_wire.ExtraInfo]]:
    """Each message of a successful POP_MESSAGE response with its extraInfo, as 5.x's
    MQClientAPIImpl.processPopResponse builds them: POP_CK when the broker set it (retried
    messages), else from the response header. An orderly pop's consumed count (orderCountInfo:
    the message's own, else its queue's) becomes the message's reconsume_times. A header that
    does not cover a message is a ValueError."""
    starts = pop_wire.parse_offset_info(response.ext("startOffsetInfo"))
    orders = pop_wire.parse_offset_info(response.ext("orderCountInfo"))
    pop_time = int(response.ext("popTime") or 0)
    invisible = int(response.ext("invisibleTime") or 0)
    revive_qid = int(response.ext("reviveQid") or 0)
    out = []
    for msg in codec.decode_messages(response.body):
        ck = msg.properties.get(pop_wire.POP_CK)
        if ck is not None:
            extra = pop_wire.parse_extra_info(ck)
        else:
            start = starts.get((False, str(msg.queue_id)))
            if start is None:
                raise ValueError(f"no startOffsetInfo for queue {msg.queue_id}")
            extra = pop_wire.ExtraInfo(
                ck_queue_offset=int(start),
                pop_time=pop_time,
                invisible_time=invisible,
                revive_qid=revive_qid,
                retry=False,
                broker_name=broker_name,
                queue_id=msg.queue_id,
                queue_offset=msg.queue_offset,
            )
        count = orders.get((extra.retry, f"qo{msg.queue_id}%{msg.queue_offset}"))
        if count is None:
            count = orders.get((extra.retry, str(msg.queue_id)))
        if count is not None and count.isdigit() and int(count) > 0:
            msg.reconsume_times = int(count)
        out.append((msg, extra))
    return out


def receipts(response: RemotingCommand, broker_name: str) -> list[Popped]:
    """The messages of a POP_MESSAGE response with their extraInfo strings (none unless it
    succeeded)."""
    if response.code != 0:
        return []
    return [
        Popped(msg, msg.properties.get(pop_wire.POP_CK) or extra.encode())
        for msg, extra in popped_messages(response, broker_name)
    ]


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
