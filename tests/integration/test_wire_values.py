"""Header values out of their Java range, against real servers: refused with SYSTEM_ERROR and a
remark naming the field (as Java answers its parse failures), nothing stored or persisted, no
traceback logged; and a send whose sysFlag claims IPv6 hosts from an IPv4 client stores a
record that recovery reads back, after kill -9 and after a clean stop."""

from __future__ import annotations

import zlib

import pytest

from remoting.body import RegisterBrokerBody, TopicConfig, TopicConfigSerializeWrapper
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.serde import encode_body
from tests.harness import ServerProcess
from tests.integration.brokerkit import (
    broker_conf,
    call,
    pull_all,
    pull_request,
    send_request,
    start_broker,
    start_namesrv,
)


def with_fields(request: RemotingCommand, **fields: object) -> RemotingCommand:
    """``request`` with some extFields replaced by raw values, as a hostile client sends them."""
    request.ext_fields = {**(request.ext_fields or {}), **{k: str(v) for k, v in fields.items()}}
    return request


def assert_no_traceback(process: ServerProcess) -> None:
    assert "Traceback" not in process.log_path.read_text(errors="replace")


async def test_host_ipv6_bits_from_a_client_cannot_cut_the_log(processes, tmp_path) -> None:
    conf = broker_conf(tmp_path)
    broker = start_broker(processes, conf)
    sent = []
    async with RemotingClient.open() as client:
        for i in range(12):
            sys_flag = (0x10, 0x20, 0x30, 0)[i % 4]  # born host v6, store host v6, both
            body = f"m{i}".encode()
            response = await call(
                client, broker.addr, with_fields(send_request("V6", body), f=sys_flag)
            )
            assert response.code == ResponseCode.SUCCESS, response.remark
            sent.append(body)
    for restart in ("kill -9", "clean stop"):
        if restart == "kill -9":
            broker.kill()
        else:
            assert broker.terminate() == 0
        broker = start_broker(processes, conf, f"broker-after-{restart.replace(' ', '-')}")
        async with RemotingClient.open() as client:
            messages = await pull_all(client, broker.addr, "V6", 0)
        assert [m.body for m in messages] == sent
        assert all(
            m.sys_flag & 0x30 == 0 and m.born_host.startswith("127.0.0.1:") for m in messages
        )
    assert_no_traceback(broker)


SEND_REFUSALS = [
    ({"f": 2**31 + 4}, "f (sysFlag)='2147483652'"),  # once: a normal message turned half
    ({"f": 2**32 + 16}, "f (sysFlag)='4294967312'"),
    ({"h": 2**32 + 5}, "h (flag)='4294967301'"),  # once: silently cut to 5
    ({"j": 2**40}, "j (reconsumeTimes)="),
    ({"g": 2**64}, "g (bornTimestamp)="),
    ({"e": 2**31}, "e (queueId)="),
    ({"b": "../../escape"}, "b (topic)='../../escape'"),
]


async def test_out_of_range_values_are_refused_and_nothing_is_kept(processes, tmp_path) -> None:
    conf = broker_conf(tmp_path)
    broker = start_broker(processes, conf)
    offsets = {"consumerGroup": "G", "topic": "T", "queueId": "0"}
    async with RemotingClient.open() as client:
        for fields, remark in SEND_REFUSALS:
            response = await call(
                client, broker.addr, with_fields(send_request("T", b"x"), **fields)
            )
            assert response.code == ResponseCode.SYSTEM_ERROR
            assert remark in response.remark
        delay = with_fields(send_request("T", b"x"))
        delay.ext_fields["i"] += "\x02DELAY\x01" + "9" * 5000
        response = await call(client, broker.addr, delay)
        assert (response.code, response.remark[:19]) == (
            ResponseCode.SYSTEM_ERROR,
            "bad property DELAY=",
        )
        good = {**offsets, "commitOffset": "3"}
        update = RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, good)
        assert (await call(client, broker.addr, update)).code == ResponseCode.SUCCESS
        for offset in (2**63, 2**70, -1):
            update = RemotingCommand.request(
                RequestCode.UPDATE_CONSUMER_OFFSET, {**offsets, "commitOffset": str(offset)}
            )
            response = await call(client, broker.addr, update)
            assert response.code == ResponseCode.SYSTEM_ERROR
            assert f"commitOffset='{offset}'" in response.remark
        pull = pull_request("T", 0, 0, group="G", commit_offset=1)
        response = await call(client, broker.addr, with_fields(pull, commitOffset=2**63))
        assert (response.code, "commitOffset=" in response.remark) == (
            ResponseCode.SYSTEM_ERROR,
            True,
        )
        query = RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, offsets)
        assert (await call(client, broker.addr, query)).ext("offset") == "3"
        assert await pull_all(client, broker.addr, "T", 0) == []
    assert broker.terminate() == 0
    persisted = (tmp_path / "store-broker-a-0" / "config" / "consumerOffset.json").read_text()
    assert str(2**63) not in persisted and str(2**70) not in persisted and '"T@G"' in persisted
    assert_no_traceback(broker)


async def test_namesrv_refuses_values_out_of_range(processes, tmp_path) -> None:
    ns = start_namesrv(processes, tmp_path)
    register = {
        "brokerName": "b", "brokerAddr": "127.0.0.1:1", "clusterName": "C",
        "haServerAddr": "127.0.0.1:2", "brokerId": "-1",
    }  # fmt: skip
    cases = [
        (RequestCode.REGISTER_BROKER, register, "brokerId='-1'"),
        (RequestCode.REGISTER_BROKER, {**register, "brokerId": str(2**63)}, "brokerId="),
        (
            RequestCode.REGISTER_BROKER,
            {**register, "brokerId": "0", "bodyCrc32": str(2**32)},
            "bodyCrc32=",
        ),
        (
            RequestCode.PUT_KV_CONFIG,
            {"namespace": "N" * 256, "key": "k", "value": "v"},
            "namespace=",
        ),
        (RequestCode.PUT_KV_CONFIG, {"namespace": "N", "key": "", "value": "v"}, "key="),
    ]
    ok = {**register, "brokerId": "0"}
    big = TopicConfig(topic_name="Big", read_queue_nums=2**31 - 1, write_queue_nums=4)
    bodies = [
        (ok | {"compressed": "true"}, zlib.compress(b"\0" * (65 << 20)), "inflates past"),
        (ok | {"compressed": "true"}, compressed_topic(b"T x 4 6 SINGLE_TAG"), "bad compressed"),
        (ok | {"compressed": "true"}, compressed_topic(b"T 4 4 6 ANY_TAG"), "bad compressed"),
        (ok, encode_body(register_body_with(big)), "readQueueNums=2147483647"),
    ]
    cases += [
        (RequestCode.REGISTER_BROKER, fields, remark, body) for fields, body, remark in bodies
    ]
    async with RemotingClient.open() as client:
        for code, fields, remark, *body in cases:
            request = RemotingCommand.request(code, fields, *body)
            response = await call(client, ns.addr, request)
            assert response.code == ResponseCode.SYSTEM_ERROR
            assert remark in response.remark
        kv = RemotingCommand.request(RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": "N"})
        assert (await call(client, ns.addr, kv)).code == ResponseCode.QUERY_NOT_FOUND
    assert_no_traceback(ns)


def compressed_topic(entry: bytes) -> bytes:
    """A compressed REGISTER_BROKER body (docs/spec/remoting.md §9.1) holding one topic line."""
    version = b'{"counter":1,"timestamp":1}'
    chunks = [len(version).to_bytes(4, "big"), version, (1).to_bytes(4, "big")]
    return zlib.compress(b"".join([*chunks, len(entry).to_bytes(4, "big"), entry]))


def register_body_with(config: TopicConfig) -> RegisterBrokerBody:
    wrapper = TopicConfigSerializeWrapper(topic_config_table={config.topic_name: config})
    return RegisterBrokerBody(topic_config_serialize_wrapper=wrapper)


@pytest.mark.parametrize("sys_flag", [0x301, 0x4 | 0x1])
async def test_the_bits_a_java_client_sets_are_stored_as_sent(
    processes, tmp_path, sys_flag
) -> None:
    broker = start_broker(processes, broker_conf(tmp_path))
    async with RemotingClient.open() as client:
        body = zlib.compress(b"zlib body") if sys_flag & 0x1 else b"x"
        request = with_fields(send_request("Bits", body), f=sys_flag)
        assert (await call(client, broker.addr, request)).code == ResponseCode.SUCCESS
        if sys_flag & 0x4:  # a prepared half without TRAN_MSG: stored, never delivered (as Java)
            assert await pull_all(client, broker.addr, "Bits", 0) == []
            return
        (message,) = await pull_all(client, broker.addr, "Bits", 0)
    assert message.sys_flag == sys_flag and message.body == b"zlib body"
