"""Config writes on a full disk, against real processes on a real (tmpfs) filesystem: a change
a request asks for is refused with a clear code and remark and leaves the running state as it
was; offsets stay in memory, are logged once and land once space is freed (issue 22 item 6)."""

from __future__ import annotations

import json

import trio

from remoting import fastjson, properties
from remoting.body import SubscriptionGroupConfig
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.serde import encode_body
from tests.harness import python_module
from tests.integration.brokerkit import (
    broker_conf,
    call,
    pull_request,
    send_request,
    start_broker,
    start_namesrv,
)
from tests.integration.hakit import wait_until
from tests.mountkit import fill, free, tmpfs


def _group(name: str) -> RemotingCommand:
    body = encode_body(SubscriptionGroupConfig(group_name=name))
    return RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, body)


def _commit_offset(group: str, topic: str, offset: int) -> RemotingCommand:
    fields = {
        "consumerGroup": group,
        "topic": topic,
        "queueId": "0",
        "commitOffset": str(offset),
    }
    return RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, fields)


async def _tables(client: RemotingClient, addr: str) -> tuple[set[str], set[str]]:
    topics = await call(client, addr, RemotingCommand.request(RequestCode.GET_ALL_TOPIC_CONFIG, {}))
    groups = await call(
        client, addr, RemotingCommand.request(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, {})
    )
    return (
        set(json.loads(bytes(topics.body))["topicConfigTable"]),
        set(json.loads(bytes(groups.body))["subscriptionGroupTable"]),
    )


def _assert_refused(response: RemotingCommand, what: str) -> None:
    assert response.code == ResponseCode.SERVICE_NOT_AVAILABLE, response.remark
    assert f"cannot write config/{what}" in response.remark, response.remark
    assert "No space left on device" in response.remark and "Nothing was changed" in response.remark


async def test_broker_config_writes_on_a_full_disk(processes, tmp_path) -> None:
    store = tmp_path / "store-broker-a-0"
    with tmpfs(store / "config", size_kib=256) as config_dir:
        conf = broker_conf(tmp_path, storePathRootDir=store)
        broker = start_broker(processes, conf)
        addr = broker.addr
        async with RemotingClient.open() as client:
            assert (await call(client, addr, send_request("Before", b"x"))).code == 0
            assert (await call(client, addr, _group("GBefore"))).code == 0
            fill(config_dir)
            tables = await _tables(client, addr)

            # a send that would auto-create its topic, a new group, a pull from a new group
            _assert_refused(await call(client, addr, send_request("Full", b"x")), "topics.json")
            _assert_refused(await call(client, addr, _group("GFull")), "subscriptionGroup.json")
            pulled = await call(client, addr, pull_request("Before", 0, 0, group="CGFull"))
            _assert_refused(pulled, "subscriptionGroup.json")
            assert await _tables(client, addr) == tables  # nothing changed in memory either
            assert (await call(client, addr, send_request("Before", b"y"))).code == 0

            # offsets are kept in memory and written once the disk has room again
            committed = await call(client, addr, _commit_offset("GBefore", "Before", 1))
            assert committed.code == 0
            offsets = config_dir / "consumerOffset.json"

            async def offset_write_failed() -> bool:
                return "cannot write config/consumerOffset.json" in broker.log_path.read_text()

            await wait_until(offset_write_failed, 30, "the periodic offset write to fail")
            free(config_dir)

            async def offset_written() -> bool:
                text = offsets.read_text() if offsets.exists() else "{}"  # fastjson: int keys
                return fastjson.loads(text).get("offsetTable", {}).get("Before@GBefore") == {0: 1}

            await wait_until(offset_written, 30, "the offset to be written after the disk freed")
            assert (await call(client, addr, send_request("Full", b"x"))).code == 0
            assert (await call(client, addr, _group("GFull"))).code == 0
        broker.kill()
        stored = json.loads((config_dir / "topics.json").read_text())["topicConfigTable"]
        assert {"Before", "Full"} <= set(stored)
    log = broker.log_path.read_text()
    assert log.count("cannot write config/consumerOffset.json") == 1  # once, not per period
    assert "Traceback" not in log


async def test_admin_config_writes_on_a_full_disk(processes, tmp_path) -> None:
    with tmpfs(tmp_path / "disk", size_kib=256) as disk:
        ns = start_namesrv(processes, tmp_path, kvConfigPath=disk / "kvConfig.json")
        runtime_file = disk / "broker.properties"  # brokerConfigPath on the full disk
        conf = broker_conf(tmp_path, brokerConfigPath=runtime_file)
        broker = start_broker(processes, conf)
        async with RemotingClient.open() as client:
            put = {"namespace": "ns", "key": "before", "value": "1"}
            put_kv = RemotingCommand.request(RequestCode.PUT_KV_CONFIG, put)
            assert (await call(client, ns.addr, put_kv)).code == 0
            fill(disk)

            put = {"namespace": "ns", "key": "full", "value": "1"}
            refused = await call(
                client, ns.addr, RemotingCommand.request(RequestCode.PUT_KV_CONFIG, put)
            )
            assert refused.code == ResponseCode.SYSTEM_ERROR and "No space left" in refused.remark
            get = {"namespace": "ns", "key": "full"}
            missing = await call(
                client, ns.addr, RemotingCommand.request(RequestCode.GET_KV_CONFIG, get)
            )
            assert missing.code == ResponseCode.QUERY_NOT_FOUND  # not applied either
            delete = RemotingCommand.request(
                RequestCode.DELETE_KV_CONFIG, {"namespace": "ns", "key": "before"}
            )
            assert (await call(client, ns.addr, delete)).code == ResponseCode.SYSTEM_ERROR

            change = properties.dumps({"fileReservedTime": "24"}).encode()
            update = RemotingCommand.request(RequestCode.UPDATE_BROKER_CONFIG, {}, change)
            refused = await call(client, broker.addr, update)
            assert refused.code == ResponseCode.SYSTEM_ERROR and "No space left" in refused.remark
            shown = await call(
                client, broker.addr, RemotingCommand.request(RequestCode.GET_BROKER_CONFIG, {})
            )
            assert "fileReservedTime=72" in bytes(shown.body).decode().splitlines()

            free(disk)
            assert (await call(client, broker.addr, update)).code == 0
            again = RemotingCommand.request(RequestCode.PUT_KV_CONFIG, put)
            assert (await call(client, ns.addr, again)).code == 0
        assert ns.terminate() == 0 and broker.terminate() == 0
        kv = json.loads((disk / "kvConfig.json").read_text())["configTable"]["ns"]
        assert kv == {"before": "1", "full": "1"}
        assert properties.load(runtime_file) == {"fileReservedTime": "24"}
        # the namesrv starts again from what was written
        ns = processes.start(
            "namesrv-again", python_module("namesrv", "-c", str(tmp_path / "namesrv.conf"))
        )
        async with RemotingClient.open() as client:
            got = await call(
                client, ns.addr, RemotingCommand.request(RequestCode.GET_KV_CONFIG, get)
            )
            assert got.ext_fields["value"] == "1"
        ns.terminate()
    await trio.lowlevel.checkpoint()
