"""SendMessage's pure half: what a 5.x message becomes on the broker, which queue a FIFO group
takes, and the Code of each refusal (RocketMQ 5's SendMessageActivity)."""

from __future__ import annotations

import pytest
from google.protobuf import duration_pb2, timestamp_pb2

from proxy.apis import definition_pb2 as pb
from proxy.cluster import check_message_type
from proxy.config import ProxyConfig
from proxy.errors import ProxyError
from proxy.produce import consistent_hash, delay_level, fifo_queue_index, plan_send
from proxy.route import accepted
from remoting.message import COMPRESSED_FLAG, TRANSACTION_PREPARED_TYPE

CONFIG = ProxyConfig(namesrv_addr="127.0.0.1:9876")
NOW_MS = 1_800_000_000_000


def message(topic: str = "T", body: bytes = b"b", **system) -> pb.Message:
    system.setdefault("message_id", "01ABC")
    return pb.Message(
        topic=pb.Resource(name=topic), body=body, system_properties=pb.SystemProperties(**system)
    )


def refusal(*messages: pb.Message, config: ProxyConfig = CONFIG) -> int:
    with pytest.raises(ProxyError) as refused:
        plan_send(list(messages), config, "10.0.0.1:5000", NOW_MS)
    return refused.value.code


def test_guava_consistent_hash_golden_values() -> None:
    # Guava's HashingTest golden values for consistentHash(i, 100), i = 0..19
    golden = [0, 55, 62, 8, 45, 59, 86, 97, 82, 59, 73, 37, 17, 56, 86, 21, 90, 37, 38, 83]
    assert [consistent_hash(i, 100) for i in range(20)] == golden
    assert all(consistent_hash(-(2**31) + i, 1) == 0 for i in range(10))


def test_a_group_keeps_its_queue_and_groups_spread() -> None:
    assert len({fifo_queue_index("order-7", 8) for _ in range(3)}) == 1
    assert len({fifo_queue_index(f"order-{i}", 8) for i in range(100)}) == 8
    assert all(0 <= fifo_queue_index(f"g{i}", 3) < 3 for i in range(100))


def test_properties_as_the_proxy_writes_them() -> None:
    msg = message(
        tag="TagA",
        keys=["k1", "k2"],
        message_group="g1",
        message_type=pb.MessageType.FIFO,
        born_host="10.1.1.1",
        born_timestamp=timestamp_pb2.Timestamp(seconds=1_700_000_000, nanos=5_000_000),
        trace_context="00-abc",
        delivery_attempt=2,
    )
    msg.user_properties["color"] = "red"
    plan = plan_send([msg], CONFIG, "10.0.0.1:5000", NOW_MS)
    assert (plan.topic, plan.producer_group, plan.sharding_key, plan.sys_flag) == (
        "T",
        "T",
        "g1",
        0,
    )
    [out] = plan.messages
    assert out.properties == {
        "color": "red",
        "TAGS": "TagA",
        "KEYS": "k1 k2",
        "UNIQ_KEY": "01ABC",
        "RECONSUME_TIME": "2",
        "PGROUP": "T",
        "__SHARDINGKEY": "g1",
        "TRACE_CONTEXT": "00-abc",
        "__BORNHOST": "10.1.1.1",
        "BORN_TIMESTAMP": "1700000000005",
    }
    assert out.born_timestamp_ms == 1_700_000_000_005


def test_transaction_delay_and_gzip() -> None:
    tx = message(
        message_type=pb.MessageType.TRANSACTION,
        orphaned_transaction_recovery_duration=duration_pb2.Duration(seconds=30),
        body_encoding=pb.Encoding.GZIP,
    )
    plan = plan_send([tx], CONFIG, "10.0.0.1:5000", NOW_MS)
    assert plan.transactional
    assert plan.sys_flag == TRANSACTION_PREPARED_TYPE | COMPRESSED_FLAG
    props = plan.messages[0].properties
    assert props["TRAN_MSG"] == "true" and props["CHECK_IMMUNITY_TIME_IN_SECONDS"] == "30"
    assert props["__BORNHOST"] == "10.0.0.1:5000"  # none given: the peer's address
    delayed = message(
        message_type=pb.MessageType.DELAY,
        delivery_timestamp=timestamp_pb2.Timestamp(seconds=NOW_MS // 1000 + 7),
    )
    props = plan_send([delayed], CONFIG, "", NOW_MS).messages[0].properties
    assert props["TIMER_DELIVER_MS"] == str(NOW_MS + 7000) and "DELAY" not in props
    with_levels = ProxyConfig(namesrv_addr="127.0.0.1:9876", use_delay_level=True)
    props = plan_send([delayed], with_levels, "", NOW_MS).messages[0].properties
    assert props["DELAY"] == "3"  # 10 s: the first level longer than 7 s


def test_delay_level_picks_the_first_longer_level() -> None:
    levels = [1000, 5000, 10_000]
    assert delay_level(NOW_MS + 500, NOW_MS, levels) == 1
    assert delay_level(NOW_MS + 5000, NOW_MS, levels) == 3
    assert delay_level(NOW_MS + 99_000, NOW_MS, levels) == 3


@pytest.mark.parametrize(
    ("msg", "code"),
    [
        (message(body=b"x" * (4 * 1024 * 1024 + 1)), pb.Code.MESSAGE_BODY_TOO_LARGE),
        (message(body=b""), pb.Code.MESSAGE_BODY_EMPTY),
        (message(message_id=" "), pb.Code.ILLEGAL_MESSAGE_ID),
        (message(topic=""), pb.Code.ILLEGAL_TOPIC),
        (message(topic="a/b"), pb.Code.ILLEGAL_TOPIC),
        (message(topic="rmq_sys_x"), pb.Code.ILLEGAL_TOPIC),
        (message(tag=" "), pb.Code.ILLEGAL_MESSAGE_TAG),
        (message(tag="a\x00"), pb.Code.ILLEGAL_MESSAGE_TAG),
        (message(keys=[" "]), pb.Code.ILLEGAL_MESSAGE_KEY),
        (message(message_group="a\x7f"), pb.Code.ILLEGAL_MESSAGE_GROUP),
        (
            message(delivery_timestamp=timestamp_pb2.Timestamp(seconds=NOW_MS // 1000 + 86_401)),
            pb.Code.ILLEGAL_DELIVERY_TIME,
        ),
        (
            message(delivery_timestamp=timestamp_pb2.Timestamp(seconds=NOW_MS)),  # ms as seconds
            pb.Code.ILLEGAL_DELIVERY_TIME,
        ),
        (
            message(
                message_type=pb.MessageType.TRANSACTION,
                orphaned_transaction_recovery_duration=duration_pb2.Duration(seconds=3601),
            ),
            pb.Code.BAD_REQUEST,
        ),
    ],
)
def test_refusals(msg: pb.Message, code: int) -> None:
    assert refusal(msg) == code


def test_property_refusals() -> None:
    reserved = message()
    reserved.user_properties["TIMER_DELIVER_MS"] = "1"
    assert refusal(reserved) == pb.Code.ILLEGAL_MESSAGE_PROPERTY_KEY
    separator = message()
    separator.user_properties["k"] = "a\x01b"  # would split the stored properties string
    assert refusal(separator) == pb.Code.ILLEGAL_MESSAGE_PROPERTY_KEY
    empty = message()
    empty.user_properties["k"] = ""
    assert refusal(empty) == pb.Code.ILLEGAL_MESSAGE_PROPERTY_KEY
    many = message()
    many.user_properties.update({f"k{i}": "v" for i in range(129)})
    assert refusal(many) == pb.Code.MESSAGE_PROPERTIES_TOO_LARGE


def test_a_batch_is_one_topic() -> None:
    assert refusal() == pb.Code.MESSAGE_CORRUPTED
    assert refusal(message(topic="A"), message(topic="B")) == pb.Code.MESSAGE_CORRUPTED
    plan = plan_send([message(message_group="g"), message()], CONFIG, "", NOW_MS)
    assert plan.sharding_key is None  # a batch's queue is not chosen by a group


@pytest.mark.parametrize(
    ("system", "kind"),
    [
        ({}, "NORMAL"),
        ({"message_group": "g"}, "FIFO"),
        ({"message_type": pb.MessageType.FIFO}, "NORMAL"),  # a FIFO message needs a group
        ({"delivery_timestamp": timestamp_pb2.Timestamp(seconds=NOW_MS // 1000 + 5)}, "DELAY"),
        ({"message_type": pb.MessageType.TRANSACTION}, "TRANSACTION"),
    ],
)
def test_message_type_comes_from_the_properties(system: dict, kind: str) -> None:
    assert plan_send([message(**system)], CONFIG, "", NOW_MS).message_type == kind


def test_topic_type_check() -> None:
    check_message_type("FIFO", "FIFO")
    check_message_type("MIXED", "DELAY")
    for topic_type, message_type in [
        ("FIFO", "NORMAL"),
        ("NORMAL", "FIFO"),
        ("MIXED", "UNSPECIFIED"),
    ]:
        with pytest.raises(ProxyError) as refused:
            check_message_type(topic_type, message_type)
        assert refused.value.code == pb.Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE
    assert accepted("FIFO") == (pb.MessageType.FIFO,)
    assert len(accepted("MIXED")) == 4
    assert accepted("UNSPECIFIED") == (pb.MessageType.MESSAGE_TYPE_UNSPECIFIED,)
