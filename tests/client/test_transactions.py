"""Transactional messages end to end: commit is delivered, rollback never is, and an undecided
half is resolved by the broker checking back with the producer."""

from __future__ import annotations

import pytest
import trio

from client.consumer import ConsumeStatus, PushConsumer
from client.message import Message, SendStatus
from client.transaction import LocalTransactionState, TransactionProducer
from remoting import message as codec
from remoting.body import ConsumeFromWhere
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from tests.integration.brokerkit import broker_conf, start_broker, start_namesrv


@pytest.fixture
def cluster(processes, tmp_path):
    ns = start_namesrv(processes, tmp_path)
    broker = start_broker(
        processes,
        broker_conf(
            tmp_path,
            namesrvAddr=ns.addr,
            transactionTimeOut=500,
            transactionCheckInterval=300,
        ),
    )
    return ns, broker


class Bank:
    """The application's local transactions: the decision is in the message's keys."""

    def __init__(self) -> None:
        self.checked: list[str] = []

    def execute_local_transaction(self, msg, arg):
        return {
            "commit": LocalTransactionState.COMMIT_MESSAGE,
            "rollback": LocalTransactionState.ROLLBACK_MESSAGE,
        }.get(arg, LocalTransactionState.UNKNOW)

    async def check_local_transaction(self, msg):
        self.checked.append(msg.keys)
        assert msg.topic == "Payments"  # the real topic, not the half topic
        return LocalTransactionState.COMMIT_MESSAGE


async def test_commit_rollback_and_check_back(cluster) -> None:
    ns, _ = cluster
    bank = Bank()
    received: list[str] = []
    all_in = trio.Event()

    def listener(msgs):
        received.extend(m.keys for m in msgs)
        if {"c1", "u1"} <= set(received):
            all_in.set()
        return ConsumeStatus.CONSUME_SUCCESS

    async with TransactionProducer.open(ns.addr, "TxPG", bank) as producer:
        for key, decision in (("c1", "commit"), ("r1", "rollback"), ("u1", "unknown")):
            result = await producer.send_message_in_transaction(
                Message("Payments", key.encode(), keys=key), decision
            )
            assert result.send_result.status is SendStatus.SEND_OK
        async with PushConsumer.open(
            ns.addr,
            "TxCG",
            listener,
            {"Payments": "*"},
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        ):
            with trio.fail_after(30):
                await all_in.wait()
            await trio.sleep(1.0)  # a window in which the rolled-back message would show up
    assert sorted(received) == ["c1", "u1"]
    assert bank.checked == ["u1"]  # only the undecided half was checked, once


async def test_end_transaction_from_the_wrong_group_is_refused(cluster) -> None:
    ns, broker = cluster

    class Never:
        def execute_local_transaction(self, msg, arg):
            return LocalTransactionState.UNKNOW

        def check_local_transaction(self, msg):
            return LocalTransactionState.UNKNOW

    async with TransactionProducer.open(ns.addr, "RightGroup", Never()) as producer:
        result = (await producer.send_message_in_transaction(Message("Guarded", b"x"))).send_result
    request = RemotingCommand.request(
        RequestCode.END_TRANSACTION,
        {
            "producerGroup": "WrongGroup",
            "tranStateTableOffset": str(result.queue_offset),
            "commitLogOffset": str(codec.decode_offset_msg_id(result.offset_msg_id).phys_offset),
            "commitOrRollback": "8",
            "fromTransactionCheck": "false",
            "msgId": result.msg_id,
        },
    )
    async with RemotingClient.open() as client:
        response = await client.invoke(broker.addr, request, 5)
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert response.remark == "The producer group wrong"
