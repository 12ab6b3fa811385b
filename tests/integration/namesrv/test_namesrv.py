"""A real ``mqnamesrv`` with real brokers registering to it: routes, master/slave discovery,
expiry of a silent broker, unregistration on shutdown, independent NameServers."""

from __future__ import annotations

from remoting.body import ClusterInfo
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.headers import RegisterBrokerRequestHeader
from remoting.serde import decode_body, encode_header_fields
from tests.kits.brokerkit import (
    broker_conf,
    call,
    route_request,
    send_request,
    start_broker,
    start_namesrv,
    wait_for_route,
)


async def test_master_and_slave_register_and_the_route_names_both(processes, tmp_path) -> None:
    ns = start_namesrv(processes, tmp_path)
    master_conf = broker_conf(tmp_path, namesrvAddr=ns.addr)
    master = start_broker(processes, master_conf, "master")
    slave = start_broker(processes, broker_conf(tmp_path, namesrvAddr=ns.addr, brokerId=1), "slave")
    async with RemotingClient.open() as client:
        route = await wait_for_route(
            client, ns.addr, "TBW102", lambda r: r and len(r.broker_datas[0].broker_addrs) == 2
        )
        assert route.broker_datas[0].broker_addrs == {0: master.addr, 1: slave.addr}
        assert route.queue_datas[0].perm == 7 and route.queue_datas[0].write_queue_nums == 8
        missing = await call(client, ns.addr, route_request("NoSuchTopic"))
        assert missing.code == ResponseCode.TOPIC_NOT_EXIST
        # A send that auto-creates a topic makes the broker register again at once.
        assert (await call(client, master.addr, send_request("Fresh", b"x"))).code == 0
        fresh = await wait_for_route(client, ns.addr, "Fresh", lambda r: r is not None)
        assert fresh.queue_datas[0].write_queue_nums == 4
        cluster = decode_body(
            ClusterInfo,
            (
                await call(
                    client, ns.addr, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO)
                )
            ).body,
        )
        assert cluster.cluster_addr_table == {"TestCluster": {"broker-a"}}
    # The slave's registration reply named its master: the slave's log says so.
    assert f"master of broker-a is {master.addr}" in slave.log_tail(200)
    assert master.terminate() == 0  # unregisters on the way out
    async with RemotingClient.open() as client:
        route = await wait_for_route(
            client, ns.addr, "TBW102", lambda r: r and 0 not in r.broker_datas[0].broker_addrs
        )
        assert route.broker_datas[0].broker_addrs == {1: slave.addr}


async def test_silent_broker_expires_and_name_servers_are_independent(processes, tmp_path) -> None:
    ns1 = start_namesrv(
        processes, tmp_path, "ns1", brokerChannelExpiredTime=500, scanNotActiveBrokerInterval=100
    )
    ns2 = start_namesrv(processes, tmp_path, "ns2")
    header = RegisterBrokerRequestHeader(
        broker_name="ghost",
        broker_addr="127.0.0.1:1",
        cluster_name="C",
        ha_server_addr="127.0.0.1:2",
        broker_id=0,
    )
    body = (
        b'{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1,'
        b'"timestamp":1},"topicConfigTable":{"Ghost":{"topicName":"Ghost","readQueueNums":2,'
        b'"writeQueueNums":2,"perm":6,"topicFilterType":"SINGLE_TAG","topicSysFlag":0,"order":false}}}}'
    )
    # The broker's connection stays open but it never registers again; as in Java, the
    # NameServer closes that connection when the broker expires, so watch from another one.
    async with RemotingClient.open() as broker, RemotingClient.open() as client:
        register = RemotingCommand.request(
            RequestCode.REGISTER_BROKER, encode_header_fields(header), body
        )
        assert (await call(broker, ns1.addr, register)).code == 0
        assert (await call(client, ns2.addr, route_request("Ghost"))).code == (
            ResponseCode.TOPIC_NOT_EXIST
        )
        await wait_for_route(client, ns1.addr, "Ghost", lambda r: r is None)
        bad_crc = encode_header_fields(header) | {"bodyCrc32": "12345"}
        refused = await call(
            client, ns1.addr, RemotingCommand.request(RequestCode.REGISTER_BROKER, bad_crc, body)
        )
        assert (refused.code, refused.remark) == (ResponseCode.SYSTEM_ERROR, "crc32 not match")
