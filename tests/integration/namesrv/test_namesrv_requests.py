"""Every NameServer request code against a running ``mqnamesrv``, answered as Java's
DefaultRequestProcessor answers it; the KV config survives a restart."""

from __future__ import annotations

import json

import pytest

from namesrv.register_body import encode_compressed
from remoting import constants as K
from remoting.body import (
    DataVersion,
    KVTable,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicList,
    TopicRouteData,
)
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.errors import RemotingTimeoutError
from remoting.headers import RegisterBrokerRequestHeader
from remoting.serde import decode_body, encode_body, encode_header_fields
from tests.kits.brokerkit import call, start_namesrv

MASTER = "127.0.0.1:30911"


def request(code: int, fields: dict[str, str] | None = None, body: bytes = b"") -> RemotingCommand:
    return RemotingCommand.request(code, fields or {}, body)


def register_body(version: int = 1) -> RegisterBrokerBody:
    unit = TopicConfig(
        topic_name="UnitT",
        read_queue_nums=2,
        write_queue_nums=2,
        topic_sys_flag=K.TOPIC_SYS_FLAG_UNIT,
    )
    plain = TopicConfig(topic_name="T", read_queue_nums=4, write_queue_nums=4)
    return RegisterBrokerBody(
        topic_config_serialize_wrapper=TopicConfigSerializeWrapper(
            topic_config_table={"T": plain, "UnitT": unit},
            data_version=DataVersion(counter=version, timestamp=version),
        )
    )


def register(compressed: bool, version: int = 1) -> RemotingCommand:
    header = RegisterBrokerRequestHeader(
        broker_name="broker-a",
        broker_addr=MASTER,
        cluster_name="C",
        ha_server_addr="127.0.0.1:30912",
        broker_id=0,
        compressed=compressed,
    )
    wrapper = register_body(version)
    body = encode_compressed(wrapper) if compressed else encode_body(wrapper)
    return request(RequestCode.REGISTER_BROKER, encode_header_fields(header), body)


async def topic_list(client: RemotingClient, addr: str, code: int, **fields: str) -> list[str]:
    response = await call(client, addr, request(code, fields))
    assert response.code == ResponseCode.SUCCESS, response.remark
    return sorted(decode_body(TopicList, response.body).topic_list)


async def test_broker_and_topic_requests(processes, tmp_path) -> None:
    ns = start_namesrv(processes, tmp_path)
    async with RemotingClient.open() as client:
        assert (await call(client, ns.addr, register(compressed=True))).code == 0
        route = await call(
            client, ns.addr, request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"})
        )
        assert decode_body(TopicRouteData, route.body).queue_datas[0].read_queue_nums == 4
        # Java's compressed form carries no topicSysFlag (TopicConfig.encode leaves it out): the
        # unit flag arrives with a JSON registration of a newer data version.
        assert await topic_list(client, ns.addr, RequestCode.GET_UNIT_TOPIC_LIST) == []
        assert (await call(client, ns.addr, register(compressed=False, version=2))).code == 0

        assert await topic_list(
            client, ns.addr, RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER
        ) == [
            "T",
            "UnitT",
        ]
        assert await topic_list(
            client, ns.addr, RequestCode.GET_TOPICS_BY_CLUSTER, cluster="C"
        ) == [
            "T",
            "UnitT",
        ]
        assert await topic_list(client, ns.addr, RequestCode.GET_UNIT_TOPIC_LIST) == ["UnitT"]
        assert await topic_list(client, ns.addr, RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST) == []
        assert (
            await topic_list(client, ns.addr, RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST) == []
        )
        # Java lists cluster and broker names as the "system topics", with a broker address.
        system = await call(client, ns.addr, request(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS))
        listed = decode_body(TopicList, system.body)
        assert sorted(listed.topic_list) == ["C", "broker-a"] and listed.broker_addr == MASTER

        version = encode_body(DataVersion(counter=2, timestamp=2))
        same = await call(
            client,
            ns.addr,
            request(RequestCode.QUERY_DATA_VERSION, _broker_fields(), version),
        )
        assert same.ext_fields["changed"] == "false"
        newer = encode_body(DataVersion(counter=3, timestamp=3))
        changed = await call(
            client, ns.addr, request(RequestCode.QUERY_DATA_VERSION, _broker_fields(), newer)
        )
        assert changed.ext_fields["changed"] == "true"

        wipe = await call(
            client,
            ns.addr,
            request(RequestCode.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"}),
        )
        assert wipe.ext_fields["wipeTopicCount"] == "2"
        add = await call(
            client,
            ns.addr,
            request(RequestCode.ADD_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"}),
        )
        assert add.ext_fields["addTopicCount"] == "2"

        deleted = await call(
            client, ns.addr, request(RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": "UnitT"})
        )
        assert deleted.code == ResponseCode.SUCCESS
        assert await topic_list(
            client, ns.addr, RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER
        ) == ["T"]

        gone = await call(client, ns.addr, request(RequestCode.UNREGISTER_BROKER, _broker_fields()))
        assert gone.code == ResponseCode.SUCCESS
        route = await call(
            client, ns.addr, request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"})
        )
        assert route.code == ResponseCode.TOPIC_NOT_EXIST

        config = await call(client, ns.addr, request(RequestCode.GET_NAMESRV_CONFIG))
        assert b"kvConfigPath=" in bytes(config.body)


def _broker_fields() -> dict[str, str]:
    return {"brokerName": "broker-a", "brokerAddr": MASTER, "clusterName": "C", "brokerId": "0"}


async def test_kv_config_and_order_topics_persist_across_a_restart(processes, tmp_path) -> None:
    ns = start_namesrv(processes, tmp_path, orderMessageEnable="true")
    order = K.ORDER_TOPIC_CONFIG_NAMESPACE
    async with RemotingClient.open() as client:
        put = {"namespace": order, "key": "T", "value": "broker-a:4"}
        assert (await call(client, ns.addr, request(RequestCode.PUT_KV_CONFIG, put))).code == 0
        put2 = {"namespace": "ns", "key": "k", "value": "v"}
        assert (await call(client, ns.addr, request(RequestCode.PUT_KV_CONFIG, put2))).code == 0
        # A registering master gets the order-topic table back; a route carries its entry.
        reply = await call(client, ns.addr, register(compressed=False))
        assert decode_body(KVTable, reply.body).table == {"T": "broker-a:4"}
        route = await call(
            client, ns.addr, request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"})
        )
        assert decode_body(TopicRouteData, route.body).order_topic_conf == "broker-a:4"

    ns.terminate()
    stored = json.loads((tmp_path / "namesrv-kv" / "kvConfig.json").read_text())
    assert stored["configTable"]["ns"] == {"k": "v"}
    ns = start_namesrv(processes, tmp_path, "namesrv", orderMessageEnable="true")
    async with RemotingClient.open() as client:
        got = await call(
            client, ns.addr, request(RequestCode.GET_KV_CONFIG, {"namespace": "ns", "key": "k"})
        )
        assert got.ext_fields["value"] == "v"
        listed = await call(
            client, ns.addr, request(RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": "ns"})
        )
        assert decode_body(KVTable, listed.body).table == {"k": "v"}
        delete = {"namespace": "ns", "key": "k"}
        assert (
            await call(client, ns.addr, request(RequestCode.DELETE_KV_CONFIG, delete))
        ).code == 0
        missing = await call(client, ns.addr, request(RequestCode.GET_KV_CONFIG, delete))
        assert missing.code == ResponseCode.QUERY_NOT_FOUND
        empty = await call(
            client, ns.addr, request(RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": "ns"})
        )
        assert empty.code == ResponseCode.QUERY_NOT_FOUND


async def test_unknown_request_codes_get_no_answer_as_from_java(processes, tmp_path) -> None:
    ns = start_namesrv(processes, tmp_path)
    async with RemotingClient.open() as client:
        with pytest.raises(RemotingTimeoutError):
            await call(client, ns.addr, request(9999), timeout_s=0.5)
        assert (await call(client, ns.addr, request(RequestCode.GET_BROKER_CLUSTER_INFO))).code == 0
