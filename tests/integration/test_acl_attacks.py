"""Issue 23's unauthenticated attacks, each run against a NameServer and broker without ACL
(before: the attack works) and with ``aclEnable=true`` on both (after: NO_PERMISSION, and
nothing read, stored or changed). The broker signs its own registrations with an admin
account from broker.conf, so it keeps its routes when the NameServer checks them."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest

from broker.registration import BrokerIdentity, BrokerOuterAPI
from remoting import message as codec
from remoting.body import SubscriptionGroupConfig, TopicConfig, TopicConfigSerializeWrapper
from remoting.client import RemotingClient
from remoting.codes import RequestCode as R
from remoting.codes import ResponseCode
from remoting.command import RemotingCommand
from remoting.serde import encode_body
from tests.harness import ServerProcess
from tests.integration.aclkit import ADMIN, acl_home, refused_by_acl, signed_call
from tests.integration.brokerkit import (
    broker_conf,
    pull_request,
    route_request,
    send_request,
    start_broker,
    start_namesrv,
)


@attrs.define
class Target:
    ns: ServerProcess
    broker: ServerProcess
    conf: Path
    stored_at: int  # CommitLog offset of the one message in "Orders"


async def as_admin(client: RemotingClient, addr: str, request: RemotingCommand) -> RemotingCommand:
    response = await signed_call(client, addr, request, ADMIN)
    assert response.code == ResponseCode.SUCCESS, (request.code, response.remark)
    return response


async def prepare(processes, tmp_path: Path, acl: bool) -> Target:
    home = acl_home(tmp_path)
    switch = "true" if acl else "false"
    ns = start_namesrv(processes, tmp_path, aclEnable=switch, rocketmqHome=home)
    conf = broker_conf(
        tmp_path,
        namesrvAddr=ns.addr,
        aclEnable=switch,
        rocketmqHome=home,
        accessKey=ADMIN.access_key,
        secretKey=ADMIN.secret_key,
    )
    broker = start_broker(processes, conf)
    async with RemotingClient.open() as client:
        group = SubscriptionGroupConfig(group_name="billing")
        create = RemotingCommand.request(
            R.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, encode_body(group)
        )
        await as_admin(client, broker.addr, create)
        sent = await as_admin(
            client, broker.addr, send_request("Orders", b"card 4111", keys="order-1")
        )
        offset = {
            "consumerGroup": "billing",
            "topic": "Orders",
            "queueId": "0",
            "commitOffset": "1",
        }
        await as_admin(
            client, broker.addr, RemotingCommand.request(R.UPDATE_CONSUMER_OFFSET, offset)
        )
        await _wait_for_route(client, ns.addr)
    phys_offset = codec.decode_offset_msg_id(sent.ext("msgId") or "").phys_offset
    return Target(ns, broker, conf, phys_offset)


async def _wait_for_route(client: RemotingClient, ns_addr: str) -> None:
    from tests.integration.hakit import wait_until

    async def routed() -> bool:
        return (await client.invoke(ns_addr, route_request("Orders"), 10)).code == 0

    await wait_until(routed, timeout_s=30, what="the route of Orders")


def expect(response: RemotingCommand, acl: bool, worked: bool) -> None:
    if acl:
        assert refused_by_acl(response), (response.code, response.remark)
    else:
        assert worked and response.code == ResponseCode.SUCCESS, (response.code, response.remark)


@pytest.mark.parametrize("acl", [False, True], ids=["acl-off", "acl-on"])
async def test_each_unauthenticated_attack_before_and_after(processes, tmp_path, acl) -> None:
    target = await prepare(processes, tmp_path, acl)
    broker, ns = target.broker.addr, target.ns.addr
    async with RemotingClient.open() as attacker, RemotingClient.open() as owner:

        async def check(addr: str, request: RemotingCommand) -> RemotingCommand:
            return await signed_call(owner, addr, request, ADMIN)

        # read every message body: a pull with a made-up group, VIEW_MESSAGE_BY_ID, QUERY_MESSAGE
        pulled = await attacker.invoke(broker, pull_request("Orders", 0, 0, group="nosy"), 10)
        expect(pulled, acl, b"card 4111" in pulled.body)
        view = RemotingCommand.request(R.VIEW_MESSAGE_BY_ID, {"offset": str(target.stored_at)})
        viewed = await attacker.invoke(broker, view, 10)
        expect(viewed, acl, b"card 4111" in viewed.body)
        query = RemotingCommand.request(
            R.QUERY_MESSAGE,
            {"topic": "Orders", "key": "order-1", "maxNum": "32", "beginTimestamp": "0",
             "endTimestamp": str(2**62)},
        )  # fmt: skip
        queried = await attacker.invoke(broker, query, 10)
        expect(queried, acl, b"card 4111" in queried.body)

        # reset a group's offsets
        reset = RemotingCommand.request(
            R.INVOKE_BROKER_TO_RESET_OFFSET,
            {"topic": "Orders", "group": "billing", "timestamp": "0", "isForce": "true"},
        )
        expect(await attacker.invoke(broker, reset, 10), acl, True)
        committed = RemotingCommand.request(
            R.QUERY_CONSUMER_OFFSET, {"consumerGroup": "billing", "topic": "Orders", "queueId": "0"}
        )
        offset = (await check(broker, committed)).ext("offset")
        assert offset == ("1" if acl else "0")

        # change broker config (kept in brokerConfigPath, read over broker.conf at every start)
        kept = tmp_path / "store-broker-a-0" / "config" / "broker.properties"
        change = RemotingCommand.request(R.UPDATE_BROKER_CONFIG, {}, b"brokerPermission=4\n")
        expect(await attacker.invoke(broker, change, 10), acl, True)
        assert kept.exists() != acl

        # delete topics and groups
        delete_group = RemotingCommand.request(R.DELETE_SUBSCRIPTIONGROUP, {"groupName": "billing"})
        expect(await attacker.invoke(broker, delete_group, 10), acl, True)
        groups = await check(
            broker, RemotingCommand.request(R.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, {})
        )
        assert (b'"billing"' in groups.body) == acl
        delete_topic = RemotingCommand.request(R.DELETE_TOPIC_IN_BROKER, {"topic": "Orders"})
        expect(await attacker.invoke(broker, delete_topic, 10), acl, True)
        topics = await check(broker, RemotingCommand.request(R.GET_ALL_TOPIC_CONFIG, {}))
        assert (b'"Orders"' in topics.body) == acl

        # the NameServer: put KV config, wipe a broker's write permission, hijack a route
        put = RemotingCommand.request(
            R.PUT_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": "Orders", "value": "x:1"}
        )
        expect(await attacker.invoke(ns, put, 10), acl, True)
        get = RemotingCommand.request(
            R.GET_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": "Orders"}
        )
        assert ((await attacker.invoke(ns, get, 10)).code == ResponseCode.SUCCESS) != acl

        wipe = RemotingCommand.request(R.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"})
        expect(await attacker.invoke(ns, wipe, 10), acl, True)

        fake = BrokerIdentity("TestCluster", "broker-evil", "6.6.6.6:10911", 0, "6.6.6.6:10912")
        wrapper = TopicConfigSerializeWrapper(
            topic_config_table={"Orders": TopicConfig(topic_name="Orders")}
        )
        registered = await BrokerOuterAPI(attacker, [ns]).register_all(fake, wrapper, 10)
        assert (registered == []) == acl
        route = await attacker.invoke(ns, route_request("Orders"), 10)  # reads stay open
        assert route.code == ResponseCode.SUCCESS
        assert (b"6.6.6.6" not in route.body) == acl
        perms = {q["brokerName"]: q["perm"] for q in json.loads(route.body)["queueDatas"]}
        if acl:
            assert perms == {"broker-a": 6}
