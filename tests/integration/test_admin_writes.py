"""Concurrent admin writes against real processes: every acknowledged change is on disk, and
still there after a restart (issue 22 item 6)."""

from __future__ import annotations

import json

import trio

from remoting import properties
from remoting.body import SubscriptionGroupConfig
from remoting.client import RemotingClient
from remoting.codes import RequestCode
from remoting.command import RemotingCommand
from remoting.errors import RemotingError
from remoting.serde import encode_body
from tests.integration.brokerkit import broker_conf, call, start_broker, start_namesrv

# Keys a running broker applies at once, each with a value that is not its default.
LIVE_CHANGES = {
    "fileReservedTime": "24",
    "deleteWhen": "02",
    "diskMaxUsedSpaceRatio": "80",
    "maxMessageSize": "1048576",
    "flushIntervalCommitLog": "400",
    "syncFlushTimeout": "4000",
    "defaultQueryMaxNum": "40",
    "shortPollingTimeMills": "900",
    "transactionCheckMax": "12",
    "maxTransferCountOnMessageInDisk": "9",
}


async def _all(calls) -> list:
    results: list = [None] * len(calls)

    async def one(i, make) -> None:
        results[i] = await make()

    async with trio.open_nursery() as nursery:
        for i, make in enumerate(calls):
            nursery.start_soon(one, i, make)
    return results


def _kv(code: int, **fields: str) -> RemotingCommand:
    return RemotingCommand.request(code, fields)


async def test_sixty_concurrent_kv_puts_all_land_and_survive_a_restart(processes, tmp_path) -> None:
    ns = start_namesrv(processes, tmp_path)
    keys = [f"k{i}" for i in range(60)]
    async with RemotingClient.open() as client:
        answers = await _all(
            [
                lambda k=k: call(
                    client, ns.addr, _kv(RequestCode.PUT_KV_CONFIG, namespace="ns", key=k, value=k)
                )
                for k in keys
            ]
        )
    assert [(a.code, a.remark) for a in answers] == [(0, None)] * 60
    assert ns.terminate() == 0
    stored = json.loads((tmp_path / "namesrv-kv" / "kvConfig.json").read_text())
    assert stored["configTable"]["ns"] == {k: k for k in keys}
    # No temp file left behind; a .bak exists only when the puts took more than one write.
    leftovers = {p.name for p in (tmp_path / "namesrv-kv").iterdir()}
    assert {"kvConfig.json"} <= leftovers <= {"kvConfig.json", "kvConfig.json.bak"}

    ns = start_namesrv(processes, tmp_path)
    async with RemotingClient.open() as client:
        for k in keys:
            got = await call(client, ns.addr, _kv(RequestCode.GET_KV_CONFIG, namespace="ns", key=k))
            assert (got.code, got.ext_fields.get("value")) == (0, k)


async def test_ten_concurrent_broker_config_updates_all_land_and_survive_a_restart(
    processes, tmp_path
) -> None:
    conf = broker_conf(tmp_path)
    broker = start_broker(processes, conf)
    async with RemotingClient.open() as client:
        answers = await _all(
            [
                lambda k=k, v=v: call(
                    client,
                    broker.addr,
                    RemotingCommand.request(
                        RequestCode.UPDATE_BROKER_CONFIG, {}, f"{k}={v}\n".encode()
                    ),
                )
                for k, v in LIVE_CHANGES.items()
            ]
        )
        assert [a.code for a in answers] == [0] * len(LIVE_CHANGES), [a.remark for a in answers]
        shown = await call(
            client, broker.addr, RemotingCommand.request(RequestCode.GET_BROKER_CONFIG, {})
        )
        running = properties.loads(bytes(shown.body).decode())
        assert {k: running[k] for k in LIVE_CHANGES} == LIVE_CHANGES
    assert broker.terminate() == 0
    written = properties.load(tmp_path / "store-broker-a-0" / "config" / "broker.properties")
    assert {k: written.get(k) for k in LIVE_CHANGES} == LIVE_CHANGES

    broker = start_broker(processes, conf)
    async with RemotingClient.open() as client:
        shown = await call(
            client, broker.addr, RemotingCommand.request(RequestCode.GET_BROKER_CONFIG, {})
        )
    running = properties.loads(bytes(shown.body).decode())
    assert {k: running[k] for k in LIVE_CHANGES} == LIVE_CHANGES


async def test_concurrent_topic_and_group_changes_all_land_and_survive_a_kill(
    processes, tmp_path
) -> None:
    conf = broker_conf(tmp_path)
    broker = start_broker(processes, conf)
    topics = [f"T{i}" for i in range(40)]
    groups = [f"G{i}" for i in range(40)]

    def create_topic(name: str) -> RemotingCommand:
        fields = {
            "topic": name,
            "defaultTopic": "TBW102",
            "readQueueNums": "2",
            "writeQueueNums": "2",
            "perm": "6",
            "topicFilterType": "SINGLE_TAG",
        }
        return RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, fields)

    def create_group(name: str) -> RemotingCommand:
        body = encode_body(SubscriptionGroupConfig(group_name=name, retry_max_times=3))
        return RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, body)

    async with RemotingClient.open() as client:
        answers = await _all(
            [lambda t=t: call(client, broker.addr, create_topic(t)) for t in topics]
            + [lambda g=g: call(client, broker.addr, create_group(g)) for g in groups]
        )
    assert [a.code for a in answers] == [0] * 80
    broker.kill()  # acknowledged means on disk: no clean shutdown to save them
    config_dir = tmp_path / "store-broker-a-0" / "config"
    stored_topics = json.loads((config_dir / "topics.json").read_text())["topicConfigTable"]
    assert set(topics) <= set(stored_topics)
    stored_groups = json.loads((config_dir / "subscriptionGroup.json").read_text())
    assert set(groups) <= set(stored_groups["subscriptionGroupTable"])
    assert stored_groups["subscriptionGroupTable"]["G7"]["retryMaxTimes"] == 3


async def test_kv_puts_acknowledged_before_a_kill_survive_it(processes, tmp_path) -> None:
    ns = start_namesrv(processes, tmp_path)
    acknowledged: list[str] = []
    busy = trio.Event()  # a few hundred puts in: writes are in flight all the time

    async def storm(client: RemotingClient, worker: int) -> None:
        for i in range(10_000):
            key = f"w{worker}-{i}"
            put = _kv(RequestCode.PUT_KV_CONFIG, namespace="ns", key=key, value=key)
            try:
                answer = await call(client, ns.addr, put, timeout_s=5)
            except (RemotingError, OSError):  # killed under us: this put was never answered
                return
            assert answer.code == 0
            acknowledged.append(key)
            if len(acknowledged) >= 300:
                busy.set()

    async with RemotingClient.open() as client, trio.open_nursery() as nursery:
        for worker in range(8):
            nursery.start_soon(storm, client, worker)
        with trio.fail_after(60):
            await busy.wait()
        ns.kill()
    ns = start_namesrv(processes, tmp_path)
    async with RemotingClient.open() as client:
        listed = await call(
            client, ns.addr, _kv(RequestCode.GET_KVLIST_BY_NAMESPACE, namespace="ns")
        )
    stored = json.loads(bytes(listed.body))["table"]
    assert set(acknowledged) <= set(stored), sorted(set(acknowledged) - set(stored))[:5]
