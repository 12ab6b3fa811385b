"""Pure: the revive log's records, a checkpoint (PopCheckPoint) and an ack (AckMsg), as
fastjson with RocketMQ 5's short keys, and the names the broker's pop side uses. The wire
strings (extraInfo, offset infos, the retry topic's name) are remoting/pop_wire.py's,
re-exported here. No I/O.
"""

from __future__ import annotations

import json
from typing import Any

import attrs

from remoting.pop_wire import (  # noqa: F401 (re-exported)
    NORMAL,
    ORDER_REVIVE_QID,
    POP_CK,
    RETRY,
    SEP,
    ExtraInfo,
    normal_topic,
    offset_info_item,
    parse_extra_info,
    parse_offset_info,
    pop_retry_topic,
)

REVIVE_GROUP = "CID_RMQ_SYS_REVIVE_GROUP"
CK_TAG, ACK_TAG = "ck", "ack"
FIRST_POP_TIME = "1ST_POP_TIME"  # MessageConst.PROPERTY_FIRST_POP_TIME
MAX_BATCH = 32  # messages per pop, as Java's broker allows


def revive_topic(cluster_name: str) -> str:
    """PopAckConstants.buildClusterReviveTopic."""
    return "rmq_sys_REVIVE_LOG_" + cluster_name


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
