"""Pure: the strings and records pop passes around, in RocketMQ 5's formats (docs/pop.md).

- ``extraInfo`` (the POP_CK property, a receipt handle's core): eight fields joined by a
  space, ``ckQueueOffset popTime invisibleTime reviveQid retry brokerName queueId
  msgQueueOffset`` (ExtraInfoUtil.buildExtraInfo); ``retry`` is 1 for a message popped from
  the group's retry topic, else 0.
- ``startOffsetInfo`` / ``msgOffsetInfo`` / ``orderCountInfo`` of the POP_MESSAGE response:
  ``retry queueId value`` items joined by ``;`` (msgOffsetInfo's value: offsets joined by ``,``).
- The revive log's records: a checkpoint (PopCheckPoint) and an ack (AckMsg) as fastjson with
  RocketMQ's short keys.
No I/O here; a malformed value from a peer raises ``ValueError`` naming what is wrong.
"""

from __future__ import annotations

import json
from typing import Any

import attrs

from remoting import constants as K

SEP = " "  # MessageConst.KEY_SEPARATOR
NORMAL, RETRY = "0", "1"
ORDER_REVIVE_QID = 999  # KeyBuilder.POP_ORDER_REVIVE_QUEUE: orderly pops keep no checkpoint
REVIVE_GROUP = "CID_RMQ_SYS_REVIVE_GROUP"
CK_TAG, ACK_TAG = "ck", "ack"
POP_CK = "POP_CK"  # MessageConst.PROPERTY_POP_CK
FIRST_POP_TIME = "1ST_POP_TIME"  # MessageConst.PROPERTY_FIRST_POP_TIME
MAX_BATCH = 32  # messages per pop, as Java's broker allows


def revive_topic(cluster_name: str) -> str:
    """PopAckConstants.buildClusterReviveTopic."""
    return "rmq_sys_REVIVE_LOG_" + cluster_name


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


def parse_extra_info(text: str) -> ExtraInfo:
    """The seven- or eight-field form; anything else is ``ValueError``."""
    parts = text.split(SEP)
    if len(parts) not in (7, 8) or parts[4] not in (NORMAL, RETRY):
        raise ValueError(f"extraInfo {text[:200]!r} is not 'ckOffset popTime invisibleTime ...'")
    return ExtraInfo(
        ck_queue_offset=_long(parts[0], "ckQueueOffset"),
        pop_time=_long(parts[1], "popTime"),
        invisible_time=_long(parts[2], "invisibleTime"),
        revive_qid=_long(parts[3], "reviveQid"),
        retry=parts[4] == RETRY,
        broker_name=parts[5],
        queue_id=_long(parts[6], "queueId"),
        queue_offset=_long(parts[7], "queueOffset") if len(parts) == 8 else None,
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


# ------------------------------------------------------------------ revive log records


@attrs.define(kw_only=True)
class PopCheckPoint:
    """Messages popped from one queue at one moment: ``start_offset + d`` for d in ``diffs``.
    ``bit_map`` marks the diffs acked (bit i: diffs[i]); in the log it is always 0 (acks are
    records of their own)."""

    start_offset: int
    pop_time: int
    invisible_time: int
    queue_id: int
    topic: str
    group: str
    broker_name: str
    diffs: list[int]
    bit_map: int = 0
    revive_offset: int = -1  # the revive queue offset of its record (not in the JSON)

    @property
    def revive_time(self) -> int:
        return self.pop_time + self.invisible_time

    @property
    def key(self) -> tuple[str, str, int, int, int]:
        return (self.group, self.topic, self.queue_id, self.start_offset, self.pop_time)

    def ack(self, queue_offset: int) -> bool:
        """Mark ``queue_offset`` acked; False when it is not one of this checkpoint's."""
        diff = queue_offset - self.start_offset
        if diff not in self.diffs:
            return False
        self.bit_map |= 1 << self.diffs.index(diff)
        return True

    @property
    def all_acked(self) -> bool:
        return self.bit_map == (1 << len(self.diffs)) - 1

    def unacked_offsets(self) -> list[int]:
        return [
            self.start_offset + d for i, d in enumerate(self.diffs) if not self.bit_map >> i & 1
        ]

    def to_json(self) -> bytes:
        return json.dumps(
            {
                "so": self.start_offset,
                "pt": self.pop_time,
                "it": self.invisible_time,
                "bm": 0,
                "n": len(self.diffs),
                "q": self.queue_id,
                "t": self.topic,
                "c": self.group,
                "ro": self.revive_offset,
                "d": self.diffs,
                "bn": self.broker_name,
            },
            separators=(",", ":"),
        ).encode()


@attrs.frozen(kw_only=True)
class AckMsg:
    ack_offset: int
    start_offset: int
    group: str
    topic: str
    queue_id: int
    pop_time: int
    broker_name: str

    @property
    def key(self) -> tuple[str, str, int, int, int]:
        return (self.group, self.topic, self.queue_id, self.start_offset, self.pop_time)

    def to_json(self) -> bytes:
        return json.dumps(
            {
                "ao": self.ack_offset,
                "so": self.start_offset,
                "c": self.group,
                "t": self.topic,
                "q": self.queue_id,
                "pt": self.pop_time,
                "bn": self.broker_name,
            },
            separators=(",", ":"),
        ).encode()


def _field(data: dict[str, Any], short: str, long: str, kind: type) -> Any:
    value = data.get(short, data.get(long))
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ValueError(f"revive record field {short!r} is {value!r}")
    return value


def parse_checkpoint(body: bytes) -> PopCheckPoint:
    data = json.loads(body)
    if not isinstance(data, dict):
        raise ValueError("revive checkpoint is not a JSON object")
    diffs = data.get("d")
    if not isinstance(diffs, list) or not all(isinstance(d, int) for d in diffs) or not diffs:
        raise ValueError(f"revive checkpoint diffs are {diffs!r}")
    return PopCheckPoint(
        start_offset=_field(data, "so", "startOffset", int),
        pop_time=_field(data, "pt", "popTime", int),
        invisible_time=_field(data, "it", "invisibleTime", int),
        queue_id=_field(data, "q", "queueId", int),
        topic=_field(data, "t", "topic", str),
        group=_field(data, "c", "cid", str),
        broker_name=str(data.get("bn") or ""),
        diffs=diffs,
    )


def parse_ack(body: bytes) -> AckMsg:
    data = json.loads(body)
    if not isinstance(data, dict):
        raise ValueError("revive ack is not a JSON object")
    return AckMsg(
        ack_offset=_field(data, "ao", "ackOffset", int),
        start_offset=_field(data, "so", "startOffset", int),
        group=_field(data, "c", "consumerGroup", str),
        topic=_field(data, "t", "topic", str),
        queue_id=_field(data, "q", "queueId", int),
        pop_time=_field(data, "pt", "popTime", int),
        broker_name=str(data.get("bn") or ""),
    )
