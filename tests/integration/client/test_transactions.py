"""Transactional messages end to end: commit is delivered, rollback never is, and an undecided
half is resolved by the broker checking back with the producer."""

from __future__ import annotations

import os
import subprocess

import pytest
import trio

from client.consumer import ConsumeStatus, PushConsumer
from client.instance import ClientConfig
from client.message import Message, SendStatus
from client.transaction import LocalTransactionState, TransactionProducer
from remoting import constants as K
from remoting import message as codec
from remoting.body import ConsumeFromWhere
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from tests.harness import python_module
from tests.kits.brokerkit import broker_conf, call, pull_all, start_broker, start_namesrv
from tests.kits.consumekit import consume_until, keys_of


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
    ns, broker = cluster
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
        await decisions_recorded(broker.addr, 3)
    assert sorted(received) == ["c1", "u1"]
    assert await stored_keys(broker.addr, "Payments") == ["c1", "u1"]
    # once the check has passed every half, it passes their op records too (persisted, so a
    # restart does not read them again)
    async with RemotingClient.open() as client:
        with trio.fail_after(30):
            while await op_progress(client, broker.addr) < 3:
                await trio.sleep(0.05)
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


# ---------------------------------------------------------------------- crash and restart cases

FAST_HEARTBEAT = ClientConfig("", heartbeat_broker_interval=300)


class ByKey:
    """Decides on check-back by the key's prefix: ``ok`` commits, anything else rolls back."""

    def __init__(self) -> None:
        self.checked: list[str] = []
        self.asked = trio.Event()
        self.expect: set[str] = set()

    def execute_local_transaction(self, msg, arg):
        return self.decide(msg.keys)

    def check_local_transaction(self, msg):
        self.checked.append(msg.keys)
        if self.expect <= set(self.checked):
            self.asked.set()
        return self.decide(msg.keys)

    @staticmethod
    def decide(key: str) -> LocalTransactionState:
        if key.startswith("ok"):
            return LocalTransactionState.COMMIT_MESSAGE
        return LocalTransactionState.ROLLBACK_MESSAGE


async def max_offset(client: RemotingClient, addr: str, topic: str, queue_id: int) -> int:
    request = RemotingCommand.request(
        RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": str(queue_id)}
    )
    response = await call(client, addr, request)
    return int(response.ext("offset") or 0) if response.code == ResponseCode.SUCCESS else 0


async def op_progress(client: RemotingClient, addr: str) -> int:
    request = RemotingCommand.request(
        RequestCode.QUERY_CONSUMER_OFFSET,
        {"consumerGroup": K.TRANS_CHECK_GROUP, "topic": K.TRANS_OP_HALF_TOPIC, "queueId": "0"},
    )
    response = await call(client, addr, request)
    return int(response.ext("offset") or -1) if response.code == ResponseCode.SUCCESS else -1


async def decisions_recorded(addr: str, count: int, timeout_s: float = 30) -> None:
    """Every COMMIT or ROLLBACK writes one op record after its commit is stored: once ``count``
    op records are there, every decided message is in its real queue."""
    async with RemotingClient.open() as client:
        with trio.fail_after(timeout_s):
            while await max_offset(client, addr, K.TRANS_OP_HALF_TOPIC, 0) < count:
                await trio.sleep(0.05)


async def stored_keys(addr: str, topic: str, queues: int = 8) -> list[str]:
    """The keys of every message in ``topic``'s queues, duplicates included."""
    async with RemotingClient.open() as client:
        keys = []
        for queue_id in range(queues):
            keys += [m.keys for m in await pull_all(client, addr, topic, queue_id)]
    return sorted(keys)


def start_child(ns: str, group: str, topic: str, *keys: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        python_module("tests.integration.client.tx_child", ns, group, topic, *keys),
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


async def test_check_back_reaches_another_producer_after_the_first_died(cluster) -> None:
    ns, broker = cluster
    child = start_child(ns.addr, "TxKilled", "Transfers", "ok1", "ok2", "no1")
    try:
        lines = await trio.to_thread.run_sync(lambda: [*iter(child.stdout.readline, "ALL SENT\n")])
        assert [line.split()[1] for line in lines if line.startswith("HALF")] == [
            "ok1",
            "ok2",
            "no1",
        ]
    finally:
        child.kill()
        child.wait()
    survivor = ByKey()
    survivor.expect = {"ok1", "ok2", "no1"}
    async with TransactionProducer.open(
        ns.addr, "TxKilled", survivor, client_config=FAST_HEARTBEAT
    ):
        with trio.fail_after(30):
            await survivor.asked.wait()
        await decisions_recorded(broker.addr, 3)
    assert await stored_keys(broker.addr, "Transfers") == ["ok1", "ok2"]
    delivered = await consume_until(ns.addr, "TxKilledCG", "Transfers", lambda got: len(got) >= 2)
    assert sorted(keys_of(delivered)) == ["ok1", "ok2"] and len(delivered) == 2


async def test_decisions_survive_a_broker_crash_and_a_late_end_commits_once(
    processes, tmp_path
) -> None:
    """A decision made before ``kill -9`` is not asked about again; a half whose producer
    decides only after the restart, once the broker already asked it, is committed once."""
    ns = start_namesrv(processes, tmp_path)
    conf = broker_conf(
        tmp_path, namesrvAddr=ns.addr, transactionTimeOut=300, transactionCheckInterval=200
    )
    broker = start_broker(processes, conf)
    app = ByKey()
    app.expect = {"ok-late", "no-late"}
    release = trio.Event()
    halves_sent = trio.Event()
    pending: list[str] = []

    class Slow(ByKey):
        async def execute_local_transaction(self, msg, arg):
            pending.append(msg.keys)
            if len(pending) == 2:
                halves_sent.set()
            await release.wait()
            return self.decide(msg.keys)

    slow = Slow()
    slow.check_local_transaction = app.check_local_transaction  # type: ignore[method-assign]
    async with TransactionProducer.open(ns.addr, "TxCrash", app, client_config=FAST_HEARTBEAT) as p:
        await p.send_message_in_transaction(Message("Ledger", b"x", keys="ok-before"))
        await decisions_recorded(broker.addr, 1)
        async with trio.open_nursery() as nursery:
            p.listener = slow
            for key in ("ok-late", "no-late"):
                nursery.start_soon(p.send_message_in_transaction, Message("Ledger", b"x", keys=key))
            with trio.fail_after(30):
                await halves_sent.wait()
            broker.kill()
            broker = start_broker(processes, conf, "broker-again")
            with trio.fail_after(30):
                await app.asked.wait()  # the restarted broker asked about both halves
            release.set()  # and now the producer's own, late, decisions arrive too
        await decisions_recorded(broker.addr, 3)
    assert "ok-before" not in app.checked
    assert await stored_keys(broker.addr, "Ledger") == ["ok-before", "ok-late"]


async def test_a_half_never_decided_is_dropped_after_transaction_check_max(
    processes, tmp_path
) -> None:
    ns = start_namesrv(processes, tmp_path)
    conf = broker_conf(
        tmp_path,
        namesrvAddr=ns.addr,
        transactionTimeOut=100,
        transactionCheckInterval=100,
        transactionCheckMax=2,
    )
    broker = start_broker(processes, conf)
    checked: list[str] = []

    class Undecided:
        def execute_local_transaction(self, msg, arg):
            return LocalTransactionState.UNKNOW

        def check_local_transaction(self, msg):
            checked.append(msg.keys)
            return LocalTransactionState.UNKNOW

    async with (
        TransactionProducer.open(ns.addr, "TxLimbo", Undecided()) as producer,
        RemotingClient.open() as client,
    ):
        await producer.send_message_in_transaction(Message("Limbo", b"x", keys="limbo"))
        with trio.fail_after(30):
            while await max_offset(client, broker.addr, K.TRANS_CHECK_MAX_TIME_TOPIC, 0) < 1:
                await trio.sleep(0.05)
    assert checked == ["limbo", "limbo"]
    assert await stored_keys(broker.addr, "Limbo") == []
