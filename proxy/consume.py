"""The consumer RPCs' pure half: receipt handles (a popped message's POP_CK extraInfo with its
CommitLog offset appended, RocketMQ 5's ReceiptHandle), the checks ReceiveMessage,
AckMessage and ChangeInvisibleDuration make, long-polling time, and a stored message as the
5.x SDK sees it (GrpcConverter.buildMessage)."""

from __future__ import annotations

import hashlib

import attrs
from google.protobuf import duration_pb2, timestamp_pb2

from proxy.apis import definition_pb2 as pb
from proxy.errors import ProxyError
from proxy.produce import RESERVED_PROPERTIES, SHARDING_KEY, TIMER_DELIVER_MS, TRACE_CONTEXT
from remoting import names
from remoting import pop_wire as ck_info
from remoting.message import MessageExt

Code = pb.Code
MAX_HANDLE_CHARS = 512
MAX_BATCH = 32  # ProxyUtils.MAX_MSG_NUMS_FOR_POP_REQUEST
MIN_INVISIBLE_MS_FOR_RECEIVE = 10_000  # ProxyConfig.minInvisibleTimeMillsForRecv
MAX_INVISIBLE_MS = 12 * 3600 * 1000  # ProxyConfig.maxInvisibleTimeMills
MIN_POLLING_MS = 5_000  # grpcClientConsumerMinLongPollingTimeoutMillis
MAX_POLLING_MS = 20_000  # grpcClientConsumerMaxLongPollingTimeoutMillis
DLQ_ORIGIN_TOPIC = "DLQ_ORIGIN_TOPIC"
DLQ_ORIGIN_MESSAGE_ID = "DLQ_ORIGIN_MESSAGE_ID"


@attrs.frozen
class ReceiptHandle:
    extra: ck_info.ExtraInfo
    commit_log_offset: int

    def encode(self) -> str:
        return f"{self.extra.encode()}{ck_info.SEP}{self.commit_log_offset}"

    @property
    def extra_info(self) -> str:
        """What the broker's ACK_MESSAGE / CHANGE_MESSAGE_INVISIBLETIME parse."""
        return self.extra.encode()

    def real_topic(self, topic: str, group: str) -> str:
        return ck_info.pop_retry_topic(topic, group) if self.extra.retry else topic

    def expired(self, now_ms: int) -> bool:
        return self.extra.pop_time + self.extra.invisible_time <= now_ms

    def renewed(self, pop_time: int, invisible_time: int, revive_qid: int) -> ReceiptHandle:
        """The handle a CHANGE_MESSAGE_INVISIBLETIME answer makes. The broker's new checkpoint
        starts at the message's own offset, so the handle's does too (MQClientAPIImpl builds
        it from the request's offset): an ack naming the old batch's start would match nothing
        and the message would come back."""
        offset = self.extra.queue_offset
        extra = attrs.evolve(
            self.extra,
            ck_queue_offset=self.extra.ck_queue_offset if offset is None else offset,
            pop_time=pop_time,
            invisible_time=invisible_time,
            revive_qid=revive_qid,
        )
        return ReceiptHandle(extra, self.commit_log_offset)


def parse_receipt_handle(text: str) -> ReceiptHandle:
    """ReceiptHandle.decode: eight extraInfo fields and a CommitLog offset, else
    INVALID_RECEIPT_HANDLE. The handle came back from a client: every field is checked."""
    if not text or len(text) > MAX_HANDLE_CHARS:
        raise ProxyError(Code.INVALID_RECEIPT_HANDLE, "receipt handle is malformed")
    extra_text, sep, phys = text.rpartition(ck_info.SEP)
    try:
        if not sep or not phys.isdigit() or extra_text.count(ck_info.SEP) != 7:
            raise ValueError("not eight extraInfo fields and a CommitLog offset")
        extra = ck_info.parse_extra_info(extra_text)
        if extra.queue_offset is None or names.topic_problem(extra.broker_name or "?"):
            raise ValueError("no queue offset or a bad broker name")
    except ValueError:
        raise ProxyError(Code.INVALID_RECEIPT_HANDLE, "receipt handle is malformed") from None
    commit_log_offset = int(phys)
    if commit_log_offset >= 2**63 or extra.queue_id < 0 or extra.queue_offset < 0:
        raise ProxyError(Code.INVALID_RECEIPT_HANDLE, "receipt handle is malformed")
    return ReceiptHandle(extra, commit_log_offset)


def validate_group(resource: pb.Resource) -> str:
    problem = names.group_problem(resource.name) if resource.name else "group name is empty"
    if problem is not None:
        raise ProxyError(Code.ILLEGAL_CONSUMER_GROUP, problem)
    return resource.name


def validate_invisible_ms(invisible_ms: int, minimum: int = 0) -> int:
    if invisible_ms < minimum:
        raise ProxyError(
            Code.ILLEGAL_INVISIBLE_TIME, f"the invisibleTime is too small, min is {minimum}"
        )
    if invisible_ms > MAX_INVISIBLE_MS:
        raise ProxyError(
            Code.ILLEGAL_INVISIBLE_TIME,
            f"the invisibleTime is too large, max is {MAX_INVISIBLE_MS}",
        )
    return invisible_ms


def duration_ms(duration: duration_pb2.Duration) -> int:
    return duration.seconds * 1000 + duration.nanos // 1_000_000


def polling_ms(requested_ms: int | None, remaining_ms: int | None, request_timeout_ms: int) -> int:
    """ReceiveMessageActivity's long-polling time: the request's (or what the deadline leaves
    past half the request timeout), clamped to [5 s, 20 s] and to the deadline. A deadline
    shorter than the minimum is ILLEGAL_POLLING_TIME."""
    remaining = remaining_ms if remaining_ms is not None else MAX_POLLING_MS + request_timeout_ms
    polling = requested_ms if requested_ms is not None else remaining - request_timeout_ms // 2
    polling = min(max(polling, MIN_POLLING_MS), MAX_POLLING_MS)
    if polling > remaining:
        if remaining < MIN_POLLING_MS:
            raise ProxyError(
                Code.ILLEGAL_POLLING_TIME,
                "The deadline time remaining is not enough for polling, please check network condition",
            )
        polling = remaining
    return polling


def filter_expression(expression: pb.FilterExpression) -> tuple[str, str]:
    """(expType, exp) as POP_MESSAGE takes them."""
    text = expression.expression or "*"
    if expression.type == pb.FilterType.SQL:
        return "SQL92", text
    if "\x00" in text or len(text) > 16 * 1024:
        raise ProxyError(Code.ILLEGAL_FILTER_EXPRESSION, "filter expression is malformed")
    return "TAG", text


def _timestamp(ms: int) -> timestamp_pb2.Timestamp:
    stamp = timestamp_pb2.Timestamp()
    stamp.FromMilliseconds(ms)
    return stamp


def _message_type(props: dict[str, str]) -> int:
    if props.get("TRAN_MSG") == "true":
        return pb.MessageType.TRANSACTION
    if "DELAY" in props or TIMER_DELIVER_MS in props or "TIMER_DELAY_SEC" in props:
        return pb.MessageType.DELAY
    if SHARDING_KEY in props:
        return pb.MessageType.FIFO
    return pb.MessageType.NORMAL


def to_proto_message(msg: MessageExt, handle: str, invisible_ms: int) -> pb.Message:
    """GrpcConverter.buildMessage (the body arrives decompressed: IDENTITY)."""
    props = msg.properties
    system = pb.SystemProperties(
        message_id=props.get("UNIQ_KEY") or msg.offset_msg_id,
        body_digest=pb.Digest(
            type=pb.DigestType.MD5, checksum=hashlib.md5(msg.body).hexdigest().upper()
        ),
        body_encoding=pb.Encoding.IDENTITY,
        message_type=_message_type(props),
        born_timestamp=_timestamp(msg.born_timestamp),
        born_host=props.get("__BORNHOST") or msg.born_host,
        store_timestamp=_timestamp(msg.store_timestamp),
        store_host=msg.store_host,
        receipt_handle=handle,
        queue_id=msg.queue_id,
        queue_offset=msg.queue_offset,
        delivery_attempt=msg.reconsume_times + 1,
    )
    system.invisible_duration.FromMilliseconds(invisible_ms)
    if "TAGS" in props:
        system.tag = props["TAGS"]
    if props.get("KEYS"):
        system.keys.extend(props["KEYS"].split(" "))
    deliver = props.get(TIMER_DELIVER_MS, "")
    if deliver.isdigit() and len(deliver) < 19:
        system.delivery_timestamp.CopyFrom(_timestamp(int(deliver)))
    if SHARDING_KEY in props:
        system.message_group = props[SHARDING_KEY]
    if TRACE_CONTEXT in props:
        system.trace_context = props[TRACE_CONTEXT]
    if DLQ_ORIGIN_TOPIC in props and DLQ_ORIGIN_MESSAGE_ID in props:
        system.dead_letter_queue.CopyFrom(
            pb.DeadLetterQueue(
                topic=props[DLQ_ORIGIN_TOPIC], message_id=props[DLQ_ORIGIN_MESSAGE_ID]
            )
        )
    user = {k: v for k, v in props.items() if k not in RESERVED_PROPERTIES}
    return pb.Message(
        topic=pb.Resource(name=msg.topic),
        user_properties=user,
        system_properties=system,
        body=msg.body,
    )
