"""Pop's pure parts: the extraInfo and offset-info strings, the revive records' JSON, the
orderly-pop table, the long-polling waiters."""

from __future__ import annotations

import json

import pytest
import trio

from broker.pop import ck_info
from broker.pop.ck_info import AckMsg, ExtraInfo, PopCheckPoint
from broker.pop.order_info import OrderInfoTable
from broker.pop.polling import PopLongPollingService


def test_extra_info_is_5x_eight_fields_and_round_trips() -> None:
    extra = ExtraInfo(12, 1_700_000_000_123, 60_000, 3, True, "broker-a", 2, 14)
    assert extra.encode() == "12 1700000000123 60000 3 1 broker-a 2 14"
    assert ck_info.parse_extra_info(extra.encode()) == extra
    # the Proxy's receipt handle: the eight fields and the commitLogOffset
    assert ck_info.parse_extra_info(extra.encode() + " 4096") == extra
    seven = ck_info.parse_extra_info("12 1 2 999 0 b 2")
    assert seven.queue_offset is None and seven.is_order and not seven.retry


@pytest.mark.parametrize(
    "text",
    [
        "",
        "1 2 3",
        "1 2 3 4 5 b 6 7 8",
        "a 2 3 4 0 b 6 7",
        "1 2 3 4 7 b 6 7",
        f"{2**63} 2 3 4 0 b 6 7",
    ],
)
def test_bad_extra_info_is_a_value_error(text: str) -> None:
    with pytest.raises(ValueError):
        ck_info.parse_extra_info(text)


def test_names_and_offset_info() -> None:
    assert ck_info.pop_retry_topic("T", "G") == "%RETRY%G_T"
    assert ck_info.normal_topic("%RETRY%G_T", "G") == "T"
    assert ck_info.revive_topic("DefaultCluster") == "rmq_sys_REVIVE_LOG_DefaultCluster"
    text = ";".join(
        [ck_info.offset_info_item(False, 0, 5), ck_info.offset_info_item(True, 1, "7,8")]
    )
    assert text == "0 0 5;1 1 7,8"
    assert ck_info.parse_offset_info(text) == {(False, "0"): "5", (True, "1"): "7,8"}


def test_checkpoint_and_ack_json_use_5x_short_names() -> None:
    ck = PopCheckPoint(
        start_offset=10, pop_time=5, invisible_time=100, queue_id=1, topic="T", group="G",
        broker_name="b", diffs=[0, 2, 3],
    )  # fmt: skip
    data = json.loads(ck.to_json())
    assert data == {
        "so": 10, "pt": 5, "it": 100, "bm": 0, "n": 3, "q": 1, "t": "T", "c": "G", "ro": -1,
        "d": [0, 2, 3], "bn": "b",
    }  # fmt: skip
    assert ck_info.parse_checkpoint(ck.to_json()).key == ck.key
    assert ck.ack(12) and not ck.ack(11) and ck.unacked_offsets() == [10, 13]
    assert not ck.all_acked and ck.ack(10) and ck.ack(13) and ck.all_acked
    ack = AckMsg(ack_offset=12, start_offset=10, group="G", topic="T", queue_id=1, pop_time=5,
                 broker_name="b")  # fmt: skip
    assert json.loads(ack.to_json())["ao"] == 12
    assert ck_info.parse_ack(ack.to_json()) == ack
    # 5.x's long names are read too (AckMsg's alternateNames)
    long = (
        b'{"ackOffset":1,"startOffset":0,"consumerGroup":"G","topic":"T","queueId":0,"popTime":1}'
    )
    assert ck_info.parse_ack(long).ack_offset == 1
    for bad in (b"[]", b'{"so":1}', b'{"so":"1","pt":1,"it":1,"q":0,"t":"T","c":"G","d":[0]}'):
        with pytest.raises(ValueError):
            ck_info.parse_checkpoint(bad)


def test_orderly_batches_block_count_and_move_the_offset() -> None:
    table = OrderInfoTable()
    key = ("T", "G", 0)
    assert not table.blocked(key, None, 0)
    assert table.update(key, None, 100, 50, [3, 4, 5]) == {3: 0, 4: 0, 5: 0}
    assert table.blocked(key, None, 120) and not table.blocked(key, None, 150)
    # popped again after its invisible time: counted once more
    assert table.update(key, None, 200, 50, [3, 4, 5]) == {3: 1, 4: 1, 5: 1}
    assert table.ack(key, 4, 100) is None  # stale popTime
    assert table.ack(key, 4, 200) == 3  # 3 still unacked
    assert table.ack(key, 3, 200) == 5
    assert table.change_invisible_time(key, 200, 10_000)
    assert table.blocked(key, None, 5_000)
    assert table.ack(key, 5, 200) == 6 and not table.blocked(key, None, 5_000)
    # the same attemptId gets its batch again without counting
    table.update(key, "a1", 300, 50, [6])
    assert not table.blocked(key, "a1", 310) and table.blocked(key, "a2", 310)
    assert table.update(key, "a1", 310, 50, [6]) == {6: 0}


async def test_long_polling_waiters_wake_on_their_topic_only(autojump_clock) -> None:
    polling = PopLongPollingService(max_waiters=1)
    woke: list[str] = []

    async def waiter() -> None:
        await polling.wait(("T", "%RETRY%G_T"), 10)
        woke.append("T")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(waiter)
        await trio.sleep(1)
        assert polling.waiting == 1 and polling.full
        polling.notify("Other")
        await trio.sleep(1)
        assert woke == []
        polling.notify("%RETRY%G_T")
    assert woke == ["T"] and polling.waiting == 0 and polling._waiters == {}
    with trio.move_on_after(5):  # nobody notifies: the wait ends at its timeout
        await polling.wait(("T",), 2)
    assert trio.current_time() < 20


def test_a_5x_pop_heartbeat_decodes() -> None:
    from remoting.body import ConsumeType, HeartbeatData
    from remoting.serde import decode_body

    body = (
        b'{"clientID":"proxy@1","producerDataSet":[],"consumerDataSet":[{"groupName":"G",'
        b'"consumeType":"CONSUME_POP","messageModel":"CLUSTERING",'
        b'"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","subscriptionDataSet":[],"unitMode":false}]}'
    )
    data = decode_body(HeartbeatData, body)
    assert data.consumer_data_set[0].consume_type is ConsumeType.CONSUME_POP


def test_acked_checkpoints_do_not_pile_up_in_the_revive_heap() -> None:
    from types import SimpleNamespace

    from broker.pop.revive import PopReviveService

    config = SimpleNamespace(broker_cluster_name="C", revive_queue_num=2)
    service = PopReviveService(SimpleNamespace(config=config), clock=lambda: 0)  # type: ignore[arg-type]
    for i in range(10_000):
        ck = PopCheckPoint(
            start_offset=i, pop_time=1, invisible_time=3_600_000, queue_id=0, topic="T",
            group="G", broker_name="b", diffs=[0], revive_offset=i,
        )  # fmt: skip
        service._add(ck, i % 2)
        service._apply_ack(AckMsg(ack_offset=i, start_offset=i, group="G", topic="T", queue_id=0,
                                  pop_time=1, broker_name="b"))  # fmt: skip
    assert service.table == {} and len(service._due) <= 1024 + 1
