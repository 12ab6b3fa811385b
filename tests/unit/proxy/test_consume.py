"""The consumer RPCs' pure half: receipt handles as RocketMQ 5 writes and reads them, the
long-polling time, and a stored message as the 5.x SDK sees it (GrpcConverter)."""

from __future__ import annotations

import hashlib

import attrs
import pytest

from proxy.apis import definition_pb2 as pb
from proxy.consume import (
    ReceiptHandle,
    filter_expression,
    parse_receipt_handle,
    polling_ms,
    to_proto_message,
    validate_invisible_ms,
)
from proxy.errors import ProxyError
from remoting import pop_wire as ck_info
from remoting.message import MessageExt

EXTRA = ck_info.ExtraInfo(
    ck_queue_offset=5,
    pop_time=1_800_000_000_000,
    invisible_time=30_000,
    revive_qid=2,
    retry=False,
    broker_name="broker-a",
    queue_id=3,
    queue_offset=7,
)


def code_of(fn, *args) -> int:
    with pytest.raises(ProxyError) as refused:
        fn(*args)
    return refused.value.code


def test_handle_is_extra_info_and_commit_log_offset() -> None:
    handle = ReceiptHandle(EXTRA, 123_456)
    text = handle.encode()
    assert text == "5 1800000000000 30000 2 0 broker-a 3 7 123456"
    assert parse_receipt_handle(text) == handle
    assert handle.extra_info == "5 1800000000000 30000 2 0 broker-a 3 7"
    assert handle.real_topic("T", "G") == "T"
    retried = ReceiptHandle(attrs.evolve(EXTRA, retry=True), 1)
    assert retried.real_topic("T", "G") == ck_info.pop_retry_topic("T", "G")
    assert not handle.expired(1_800_000_029_999) and handle.expired(1_800_000_030_000)
    renewed = handle.renewed(1_800_000_100_000, 5_000, 1)
    assert (renewed.extra.pop_time, renewed.extra.invisible_time, renewed.extra.revive_qid) == (
        1_800_000_100_000,
        5_000,
        1,
    )
    assert renewed.commit_log_offset == 123_456 and renewed.extra.queue_offset == 7
    assert renewed.extra.ck_queue_offset == 7  # the broker's new checkpoint starts there


@pytest.mark.parametrize(
    "text",
    [
        "",
        "5 1 2 3 0 broker-a 3 7",  # no CommitLog offset
        "5 1 2 3 0 broker-a 3 99",  # ... read as the offset: then only seven fields
        "5 1 2 3 0 broker-a 3 7 -1",
        "5 1 2 3 0 broker-a 3 7 9223372036854775808",
        "5 1 2 3 2 broker-a 3 7 1",  # neither normal nor retry
        "5 1 2 3 0 bro/ker 3 7 1",
        "5 1 2 3 0 broker-a -3 7 1",
        "x 1 2 3 0 broker-a 3 7 1",
        "5 1 2 3 0 broker-a 3 7 1 " + "9" * 600,
        "5 1 2 3 0 broker-a 3 7 1 1",  # ten fields
    ],
)
def test_malformed_handles(text: str) -> None:
    assert code_of(parse_receipt_handle, text) == pb.Code.INVALID_RECEIPT_HANDLE


def test_polling_time_and_invisible_time() -> None:
    assert polling_ms(1_000, 60_000, 3_000) == 5_000  # at least 5 s
    assert polling_ms(60_000, 90_000, 3_000) == 20_000  # at most 20 s
    assert polling_ms(15_000, 12_000, 3_000) == 12_000  # never past the deadline
    assert polling_ms(None, 30_000, 4_000) == 20_000  # none asked: the deadline less half a timeout
    assert code_of(polling_ms, 15_000, 4_000, 3_000) == pb.Code.ILLEGAL_POLLING_TIME
    assert validate_invisible_ms(10_000, 10_000) == 10_000
    assert code_of(validate_invisible_ms, 9_999, 10_000) == pb.Code.ILLEGAL_INVISIBLE_TIME
    assert code_of(validate_invisible_ms, 12 * 3600 * 1000 + 1) == pb.Code.ILLEGAL_INVISIBLE_TIME
    assert filter_expression(pb.FilterExpression(type=pb.FilterType.TAG)) == ("TAG", "*")
    sql = pb.FilterExpression(type=pb.FilterType.SQL, expression="a > 1")
    assert filter_expression(sql) == ("SQL92", "a > 1")


def test_message_as_the_sdk_sees_it() -> None:
    stored = MessageExt(
        topic="T",
        body=b"hello",
        properties={
            "UNIQ_KEY": "01AB",
            "TAGS": "TagA",
            "KEYS": "k1 k2",
            "__SHARDINGKEY": "g",
            "TIMER_DELIVER_MS": "1800000005000",
            "PGROUP": "T",
            "color": "red",
        },
        queue_id=3,
        queue_offset=7,
        born_timestamp=1_800_000_000_000,
        store_timestamp=1_800_000_000_100,
        store_host="127.0.0.1:10911",
        reconsume_times=2,
    )
    msg = to_proto_message(stored, "handle", 30_000)
    system = msg.system_properties
    assert (msg.topic.name, msg.body) == ("T", b"hello")
    assert (system.message_id, system.tag, list(system.keys)) == ("01AB", "TagA", ["k1", "k2"])
    assert system.body_digest.checksum == hashlib.md5(b"hello").hexdigest().upper()
    assert system.message_type == pb.MessageType.DELAY  # a delivery time outranks the group
    assert system.message_group == "g"
    assert system.delivery_timestamp.ToMilliseconds() == 1_800_000_005_000
    assert system.delivery_attempt == 3 and system.receipt_handle == "handle"
    assert system.invisible_duration.seconds == 30
    assert (system.queue_id, system.queue_offset) == (3, 7)
    # RocketMQ keeps only its STRING_HASH_SET names out of the user properties
    assert dict(msg.user_properties) == {"__SHARDINGKEY": "g", "color": "red"}
