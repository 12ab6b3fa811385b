"""SQL92 property filtering against a real broker (enablePropertyFilter=true): pulls return
exactly the messages whose properties match, bad expressions are refused with RocketMQ's codes,
and a consumer with a SQL92 selector receives exactly the matching messages."""

from __future__ import annotations

import pytest
import trio

from client.consumer import ConsumeStatus, MessageSelector, PushConsumer
from client.errors import MQClientError
from client.message import Message
from client.producer import Producer
from remoting import message as codec
from remoting.body import CheckClientRequestBody, ConsumeFromWhere, KVTable, SubscriptionData
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.serde import decode_body, encode_body
from tests.kits.brokerkit import (
    broker_conf,
    call,
    pull_request,
    send_request,
    start_broker,
    start_cluster,
    start_namesrv,
    wait_for_route,
)

MATCH = "a > 5 AND b = 'x'"


def props(i: int) -> dict[str, str]:
    """a = i (absent for every fourth), b alternating x / y."""
    out = {"b": "x" if i % 2 == 0 else "y"}
    if i % 4 != 3:
        out["a"] = str(i)
    return out


def matching(count: int) -> list[str]:
    return [f"m{i}" for i in range(count) if "a" in props(i) and i > 5 and props(i)["b"] == "x"]


@pytest.fixture(scope="module")
def cluster(module_processes, tmp_path_factory):
    """Shared by the module: each test pulls or consumes with its own group."""
    root = tmp_path_factory.mktemp("cluster")
    return start_cluster(module_processes, root, enablePropertyFilter="true")


async def send_and_wait_for_route(ns_addr: str) -> None:
    """Auto-create the topic and wait until the broker registered it: a consumer that starts
    while the NameServer has no route has no broker to check its subscription with, so it
    starts (as Java's checkClientInBroker, which skips a topic without a broker)."""
    async with Producer.open(ns_addr, "SqlPG") as producer:
        await producer.send(Message("Filtered", b"x"))
    async with RemotingClient.open() as client:
        await wait_for_route(client, ns_addr, "Filtered", bool)


async def pull_filtered(client, addr, topic, expression) -> tuple[list[str], int]:
    """Every message of queue 0 the expression lets through, and the offset reached."""
    keys, offset = [], 0
    while True:
        response = await call(
            client,
            addr,
            pull_request(topic, 0, offset, subscription=expression, expression_type="SQL92"),
        )
        if response.code not in (ResponseCode.SUCCESS, ResponseCode.PULL_RETRY_IMMEDIATELY):
            return keys, offset
        if response.code == ResponseCode.SUCCESS:
            keys += [m.keys for m in codec.decode_messages(response.body)]
        offset = int(response.ext("nextBeginOffset"))


async def test_a_pull_returns_exactly_the_matching_messages(cluster) -> None:
    _, broker = cluster
    async with RemotingClient.open() as client:
        for i in range(40):
            response = await call(
                client, broker.addr, send_request("Props", b"x", keys=f"m{i}", properties=props(i))
            )
            assert response.code == ResponseCode.SUCCESS
        keys, reached = await pull_filtered(client, broker.addr, "Props", MATCH)
        assert keys == matching(40) and reached == 40
        keys, _ = await pull_filtered(client, broker.addr, "Props", "a IS NULL")
        assert keys == [f"m{i}" for i in range(3, 40, 4)]
        keys, _ = await pull_filtered(
            client, broker.addr, "Props", "b IN ('y') AND a BETWEEN 0 AND 9"
        )
        assert keys == ["m1", "m5", "m9"]


async def test_bad_expressions_are_refused_with_the_reason(cluster) -> None:
    _, broker = cluster
    async with RemotingClient.open() as client:
        await call(client, broker.addr, send_request("Props", b"x", properties=props(1)))
        bad = await call(
            client,
            broker.addr,
            pull_request("Props", 0, 0, subscription="a >", expression_type="SQL92"),
        )
        assert bad.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
        assert bad.remark.startswith("parse the consumer's subscription failed (")
        unknown = await call(
            client,
            broker.addr,
            pull_request("Props", 0, 0, subscription="/a", expression_type="XPATH"),
        )
        assert unknown.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
        assert "XPATH" in unknown.remark

        def check(expression: str) -> RemotingCommand:
            sub = SubscriptionData(topic="Props", sub_string=expression, expression_type="SQL92")
            body = CheckClientRequestBody(client_id="c", group="G", subscription_data=sub)
            return RemotingCommand.request(RequestCode.CHECK_CLIENT_CONFIG, {}, encode_body(body))

        assert (await call(client, broker.addr, check(MATCH))).code == ResponseCode.SUCCESS
        refused = await call(client, broker.addr, check("a = 'unterminated"))
        assert refused.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED and refused.remark


async def test_a_sql92_consumer_receives_exactly_the_matching_messages(cluster) -> None:
    ns, _ = cluster
    got: list[str] = []
    sentinels: set[str] = set()
    done = trio.Event()

    def listener(msgs):
        for m in msgs:
            if m.keys.startswith("end"):
                sentinels.add(m.keys)
            else:
                got.append(m.keys)
        if len(sentinels) == 4:
            done.set()
        return ConsumeStatus.CONSUME_SUCCESS

    async with Producer.open(ns.addr, "SqlPG") as producer:
        for i in range(60):
            await producer.send(Message("Filtered", b"x", keys=f"m{i}", properties=props(i)))
        for queue in range(4):
            # one matching message last in every queue: once all four are in, every message
            # before them has been judged
            sentinel = Message("Filtered", b"x", keys=f"end{queue}", properties=props(8))
            await producer.send_orderly(sentinel, queue)
    async with PushConsumer.open(
        ns.addr,
        "SqlCG",
        listener,
        {"Filtered": MessageSelector.by_sql(MATCH)},
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    ):
        with trio.fail_after(30):
            await done.wait()
    assert sorted(got) == sorted(matching(60))


async def test_a_consumer_with_a_bad_expression_does_not_start(cluster) -> None:
    ns, _ = cluster
    await send_and_wait_for_route(ns.addr)
    with pytest.raises(MQClientError, match="refuses the SQL92 subscription"):
        async with PushConsumer.open(
            ns.addr, "SqlBad", lambda m: None, {"Filtered": MessageSelector.by_sql("a >> 1")}
        ):
            pass


async def test_a_broker_without_property_filter_refuses_sql92(processes, tmp_path) -> None:
    ns = start_namesrv(processes, tmp_path)
    start_broker(processes, broker_conf(tmp_path, namesrvAddr=ns.addr))
    await send_and_wait_for_route(ns.addr)
    with pytest.raises(MQClientError, match="does not support consumer to filter message by SQL92"):
        async with PushConsumer.open(
            ns.addr, "SqlOff", lambda m: None, {"Filtered": MessageSelector.by_sql(MATCH)}
        ):
            pass


async def test_a_held_pull_waits_past_messages_its_expression_refuses(cluster) -> None:
    _, broker = cluster
    async with RemotingClient.open() as client, trio.open_nursery() as nursery:
        await call(client, broker.addr, send_request("Held", b"x", keys="old", properties=props(1)))
        answer: list[RemotingCommand] = []

        async def held_pull() -> None:
            request = pull_request(
                "Held", 0, 1, subscription=MATCH, expression_type="SQL92", suspend_ms=20_000
            )
            answer.append(await call(client, broker.addr, request, timeout_s=30))

        nursery.start_soon(held_pull)
        with trio.fail_after(10):  # the pull is held once the broker counts it
            while not await broker_holds_a_pull(client, broker.addr):
                await trio.sleep(0.02)
        for i in (1, 3, 5):  # b = 'y' or a absent: refused
            await call(
                client, broker.addr, send_request("Held", b"x", keys=f"no{i}", properties=props(i))
            )
        await call(client, broker.addr, send_request("Held", b"x", keys="yes", properties=props(8)))
    (response,) = answer
    assert response.code == ResponseCode.SUCCESS
    assert [m.keys for m in codec.decode_messages(response.body)] == ["yes"]
    assert response.ext("nextBeginOffset") == "5"


async def broker_holds_a_pull(client: RemotingClient, addr: str) -> bool:
    request = RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO, {})
    info = decode_body(KVTable, (await call(client, addr, request)).body).table
    return int(info["pullHeldCount"]) > 0
