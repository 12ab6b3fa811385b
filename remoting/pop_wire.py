"""Pure: the pop strings RocketMQ 5's broker and clients pass around (docs/pop.md).

- ``extraInfo`` (the POP_CK property, a receipt handle's core): eight fields joined by a
  space, ``ckQueueOffset popTime invisibleTime reviveQid retry brokerName queueId
  msgQueueOffset`` (ExtraInfoUtil.buildExtraInfo); ``retry`` is 1 for a message popped from
  the group's retry topic, else 0.
- ``startOffsetInfo`` / ``msgOffsetInfo`` / ``orderCountInfo`` of the POP_MESSAGE response:
  ``retry key value`` items joined by ``;``.
- The pop retry topic's name (KeyBuilder).
A malformed value from a peer raises ``ValueError`` naming what is wrong.
"""

from __future__ import annotations

import attrs

from remoting import constants as K

SEP = " "  # MessageConst.KEY_SEPARATOR
NORMAL, RETRY = "0", "1"
ORDER_REVIVE_QID = 999  # KeyBuilder.POP_ORDER_REVIVE_QUEUE: orderly pops keep no checkpoint
POP_CK = "POP_CK"  # MessageConst.PROPERTY_POP_CK


def pop_retry_topic(topic: str, group: str) -> str:
    """KeyBuilder.buildPopRetryTopic (5.x, retry topic V1): ``%RETRY%<group>_<topic>``."""
    return f"{K.RETRY_GROUP_TOPIC_PREFIX}{group}_{topic}"


def normal_topic(topic: str, group: str) -> str:
    """KeyBuilder.parseNormalTopic: the topic a pop retry topic was built from."""
    prefix = f"{K.RETRY_GROUP_TOPIC_PREFIX}{group}_"
    return topic[len(prefix) :] if topic.startswith(prefix) else topic


@attrs.frozen
class ExtraInfo:
    ck_queue_offset: int
    pop_time: int
    invisible_time: int
    revive_qid: int
    retry: bool
    broker_name: str
    queue_id: int
    queue_offset: int | None = None  # absent in the seven-field form

    @property
    def is_order(self) -> bool:
        return self.revive_qid == ORDER_REVIVE_QID

    def encode(self) -> str:
        parts = [
            self.ck_queue_offset,
            self.pop_time,
            self.invisible_time,
            self.revive_qid,
            RETRY if self.retry else NORMAL,
            self.broker_name,
            self.queue_id,
        ]
        if self.queue_offset is not None:
            parts.append(self.queue_offset)
        return SEP.join(map(str, parts))


def _long(text: str, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"extraInfo {what} {text!r} is not a number") from None
    if not -(2**63) <= value < 2**63:
        raise ValueError(f"extraInfo {what} {text} is out of range")
    return value


MAX_FIELDS = 9  # the receipt handle's


def parse_extra_info(text: str) -> ExtraInfo:
    """The seven- or eight-field form, or the Proxy's receipt handle (5.x ReceiptHandle
    .encode: the eight fields and the message's commitLogOffset), which the Proxy sends as the
    extraInfo of its acks; anything else is ``ValueError``."""
    parts = text.split(SEP)
    if not 7 <= len(parts) <= MAX_FIELDS or parts[4] not in (NORMAL, RETRY):
        raise ValueError(f"extraInfo {text[:200]!r} is not 'ckOffset popTime invisibleTime ...'")
    if len(parts) == MAX_FIELDS:
        _long(parts[8], "commitLogOffset")
    return ExtraInfo(
        ck_queue_offset=_long(parts[0], "ckQueueOffset"),
        pop_time=_long(parts[1], "popTime"),
        invisible_time=_long(parts[2], "invisibleTime"),
        revive_qid=_long(parts[3], "reviveQid"),
        retry=parts[4] == RETRY,
        broker_name=parts[5],
        queue_id=_long(parts[6], "queueId"),
        queue_offset=_long(parts[7], "queueOffset") if len(parts) >= 8 else None,
    )


def offset_info_item(retry: bool, queue_id: int, value: object) -> str:
    """One ``retry queueId value`` item of startOffsetInfo, msgOffsetInfo or orderCountInfo."""
    return f"{RETRY if retry else NORMAL}{SEP}{queue_id}{SEP}{value}"


def parse_offset_info(text: str | None) -> dict[tuple[bool, str], str]:
    """The items of an offset info string by (retry, key): the key is a queueId, or in
    orderCountInfo also ``qo<queueId>%<queueOffset>`` (for clients and tests)."""
    out: dict[tuple[bool, str], str] = {}
    for item in (text or "").split(";"):
        if item:
            retry, key, value = item.split(SEP)
            out[(retry == RETRY, key)] = value
    return out
