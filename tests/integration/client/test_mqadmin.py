"""``mqadmin`` subcommands against a live NameServer + broker, run as a user would."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import trio

from remoting.client import RemotingClient
from remoting.codes import RequestCode
from remoting.command import RemotingCommand
from tests.kits.brokerkit import (
    broker_conf,
    call,
    pull_request,
    send_request,
    start_broker,
    start_cluster,
    wait_for_route,
)


@pytest.fixture
def own_cluster(processes, tmp_path):
    """For the tests that change or total what every other test would see (write permissions
    of the whole broker, the NameServer's config, the broker's lag total): their own cluster."""
    return start_cluster(processes, tmp_path)


def mqadmin(ns, *args: str, ok: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "client.mqadmin", *args, "-n", ns.addr],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode == 0) == ok, done.stderr
    return done


def as_json(ns, *args: str):
    return json.loads(mqadmin(ns, *args, "--json").stdout)


def test_topic_lifecycle_and_status_table(cluster) -> None:
    ns, broker = cluster
    created = as_json(ns, "updateTopic", "-c", "TestCluster", "-t", "Admin", "-r", "2", "-w", "2")
    assert created["brokers"] == [broker.addr]
    assert "Admin" in mqadmin(ns, "topicList").stdout.split()
    route = as_json(ns, "topicRoute", "-t", "Admin")
    assert route["queueDatas"][0]["writeQueueNums"] == 2
    for i in range(3):
        sent = as_json(ns, "sendMessage", "-t", "Admin", "-p", f"hello {i}", "-k", f"key{i}")
        assert sent["sendStatus"] == "SEND_OK"
    table = mqadmin(ns, "topicStatus", "-t", "Admin").stdout.splitlines()
    assert table[0].split() == [
        "#Broker",
        "Name",
        "#QID",
        "#Min",
        "Offset",
        "#Max",
        "Offset",
        "#Last",
        "Updated",
    ]
    assert len(table) == 3 and sum(int(line.split()[3]) for line in table[1:]) == 3
    [found] = as_json(ns, "queryMsgByKey", "-t", "Admin", "-k", "key1")
    assert found["body"] == "hello 1"
    by_id = as_json(ns, "queryMsgById", "-i", found["offsetMsgId"])
    assert by_id["keys"] == "key1"
    mqadmin(ns, "deleteTopic", "-t", "Admin", "-c", "TestCluster")
    assert "Admin" not in mqadmin(ns, "topicList").stdout.split()


def test_bad_topic_name_and_unknown_cluster_are_clear_errors(cluster) -> None:
    ns, _ = cluster
    bad = mqadmin(ns, "updateTopic", "-c", "TestCluster", "-t", "no spaces", ok=False)
    assert "invalid topic" in bad.stderr
    missing = mqadmin(ns, "updateTopic", "-c", "Nope", "-t", "T", ok=False)
    assert missing.stderr.strip() == "mqadmin updateTopic: cluster 'Nope' not found"


def test_cluster_list_and_diagnose_group_without_consumers(cluster) -> None:
    ns, broker = cluster
    rows = mqadmin(ns, "clusterList").stdout.splitlines()
    assert rows[1].split()[:4] == ["TestCluster", "broker-a", "0", broker.addr]
    as_json(ns, "sendMessage", "-t", "Orphan", "-p", "waiting")
    as_json(ns, "updateSubGroup", "-c", "TestCluster", "-g", "Nobody")
    report = as_json(ns, "diagnoseGroup", "-g", "Nobody", "-t", "Orphan")
    assert report["members"] == []
    assert any("no consumer of Nobody is online" in p for p in report["problems"])
    assert report["totalLag"] == 1 and report["delaySeconds"] >= 0  # waiting since it was sent
    status = as_json(ns, "haStatus", "-b", broker.addr)
    assert status[broker.addr]["brokerRole"] == "ASYNC_MASTER"
    assert status[broker.addr]["slaves"] == []


def test_reset_offset_by_time_rewinds_an_offline_group(cluster) -> None:
    ns, _ = cluster
    as_json(ns, "updateTopic", "-c", "TestCluster", "-t", "Rewind", "-r", "1", "-w", "1")
    for i in range(5):
        as_json(ns, "sendMessage", "-t", "Rewind", "-p", f"m{i}")
    import trio

    from tests.kits.consumekit import consume_until

    trio.run(consume_until, ns.addr, "Rewinder", "Rewind", lambda got: len(got) >= 5)
    progress = as_json(ns, "consumerProgress", "-g", "Rewinder", "-t", "Rewind")
    assert [row[4] for row in progress["rows"]] == [5]
    reset = as_json(ns, "resetOffsetByTime", "-g", "Rewinder", "-t", "Rewind", "-s", "0")
    assert [row[2] for row in reset["rows"]] == [0]
    progress = as_json(ns, "consumerProgress", "-g", "Rewinder", "-t", "Rewind")
    assert [row[4] for row in progress["rows"]] == [0]


def test_kv_config_fences_a_broker_name(cluster, processes, tmp_path) -> None:
    ns, _ = cluster
    as_json(ns, "updateKvConfig", "-s", "ROCKETMQ_TRIO_FENCE", "-k", "broker-f", "-v", "1.2.3.4:1")
    intruder = start_broker(
        processes, broker_conf(tmp_path, "broker-f", namesrvAddr=ns.addr), "intruder"
    )
    route = as_json(ns, "clusterList")["rows"]
    assert [r[1] for r in route] == ["broker-a"]  # the fenced master never registered
    import trio

    from remoting.client import RemotingClient
    from tests.kits.brokerkit import call, send_request

    async def send() -> int:
        async with RemotingClient.open() as client:
            response = await call(client, intruder.addr, send_request("T", b"x"))
            assert "FENCED" in (response.remark or "")
            return response.code

    assert trio.run(send) == 16  # NO_PERMISSION
    as_json(ns, "deleteKvConfig", "-s", "ROCKETMQ_TRIO_FENCE", "-k", "broker-f")


def test_print_msg_in_a_time_range_and_cluster_rt(cluster) -> None:
    ns, _ = cluster
    for i in range(3):
        as_json(ns, "sendMessage", "-t", "Printed", "-p", f"p{i}", "-c", "A" if i else "B")
    shown = as_json(ns, "printMsg", "-t", "Printed", "-b", "0", "-e", "now")
    assert sorted(m["body"] for m in shown) == ["p0", "p1", "p2"]
    only_a = as_json(ns, "printMsg", "-t", "Printed", "-s", "A", "-d", "false")
    assert len(only_a) == 2 and all("body" not in m for m in only_a)
    assert as_json(ns, "printMsg", "-t", "Printed", "-b", "now") == []
    rt = as_json(ns, "clusterRT", "-a", "5")
    assert [(r[1], r[3], r[4]) for r in rt["rows"]] == [("broker-a", 5, 0)]


async def test_clone_group_offset_starts_a_new_group_where_the_old_one_is(cluster) -> None:
    ns, broker = cluster

    def offsets(group: str, queue_id: int) -> RemotingCommand:
        return RemotingCommand.request(
            RequestCode.QUERY_CONSUMER_OFFSET,
            {"consumerGroup": group, "topic": "Cloned", "queueId": queue_id},
        )

    async with RemotingClient.open() as client:
        for queue_id in (0, 1):
            await call(client, broker.addr, send_request("Cloned", b"x", queue_id=queue_id))
            commit = RemotingCommand.request(
                RequestCode.UPDATE_CONSUMER_OFFSET,
                {"consumerGroup": "OldG", "topic": "Cloned", "queueId": queue_id,
                 "commitOffset": str(queue_id + 1)},
            )  # fmt: skip
            assert (await call(client, broker.addr, commit)).code == 0
        await wait_for_route(client, ns.addr, "Cloned", bool)
        done = await trio.to_thread.run_sync(
            lambda: as_json(ns, "cloneGroupOffset", "-s", "OldG", "-d", "NewG", "-t", "Cloned")
        )
        assert done["brokers"] == [broker.addr]
        for queue_id in (0, 1):
            answer = await call(client, broker.addr, offsets("NewG", queue_id))
            assert answer.ext("offset") == str(queue_id + 1)


async def test_broker_consume_stats_lists_every_groups_lag(own_cluster) -> None:
    ns, broker = own_cluster  # the footer totals every group of the broker
    async with RemotingClient.open() as client:
        for _ in range(3):
            await call(client, broker.addr, send_request("Lag", b"x"))
        # a pull creates the group (autoCreateSubscriptionGroup) and commits offset 1
        await call(client, broker.addr, pull_request("Lag", 0, 1, group="LagG", commit_offset=1))
    stats = await trio.to_thread.run_sync(
        lambda: as_json(ns, "brokerConsumeStats", "-b", broker.addr)
    )
    rows = [row for row in stats["rows"] if row[1] == "LagG"]
    assert rows[0][:7] == ["Lag", "LagG", "broker-a", 0, 3, 1, 2]
    assert rows[0][7] != "N/A"  # the time of the last consumed message
    assert all(row[6] == 0 for row in rows[1:])  # the topic's other queues, nothing sent there
    assert stats["footer"] == "Diff Total: 2"


async def test_query_cq_shows_the_raw_units_of_a_queue(cluster) -> None:
    ns, broker = cluster
    async with RemotingClient.open() as client:
        for tag in ("TagA", "TagB"):
            await call(client, broker.addr, send_request("Units", b"x" * 10, tags=tag))
        await wait_for_route(client, ns.addr, "Units", bool)
    units = await trio.to_thread.run_sync(
        lambda: as_json(ns, "queryCq", "-t", "Units", "-q", "0", "-i", "0", "-c", "5", "-g", "G")
    )
    assert (units["minQueueIndex"], units["maxQueueIndex"]) == (0, 2)
    assert [u["tagsCode"] for u in units["queueData"]] == [2598919, 2598920]  # Java's hashCodes
    first, second = units["queueData"]
    assert second["physicOffset"] == first["physicOffset"] + first["physicSize"]
    assert units["filterData"] == "G@Units is not online!"


async def test_stats_all_shows_a_topics_traffic_and_each_groups_lag(cluster) -> None:
    ns, broker = cluster
    async with RemotingClient.open() as client:
        for _ in range(3):
            await call(client, broker.addr, send_request("StatsT", b"x"))
        pulled = await call(
            client, broker.addr, pull_request("StatsT", 0, 0, group="StatsG", max_nums=2)
        )
        assert pulled.code == 0
        # commit 2 (the next pull carries it), as a consumer would
        await call(
            client, broker.addr, pull_request("StatsT", 0, 2, group="StatsG", commit_offset=2)
        )
        await wait_for_route(client, ns.addr, "StatsT", bool)
    quiet = await trio.to_thread.run_sync(lambda: as_json(ns, "statsAll", "-t", "StatsT"))
    assert [row[:3] for row in quiet["rows"]] == [["StatsT", "StatsG", 1]]
    # the broker samples its counters every 10 s: poll until the first sample is in, which
    # makes the topic active (-a)
    with trio.fail_after(60):
        while True:
            stats = await trio.to_thread.run_sync(
                lambda: as_json(ns, "statsAll", "-t", "StatsT", "-a")
            )
            if stats["rows"] and stats["rows"][0][5] == 3:
                (row,) = stats["rows"]
                break
            await trio.sleep(1)
    topic, group, lag, in_tps, out_tps, in_day, out_day = row
    assert (topic, group, lag, in_day) == ("StatsT", "StatsG", 1, 3)
    assert out_day == 3  # two messages, then the third with the second pull
    assert float(in_tps) > 0 and float(out_tps) > 0


def test_wipe_and_add_write_perm_on_every_namesrv(own_cluster) -> None:
    ns, _ = own_cluster
    as_json(ns, "updateTopic", "-c", "TestCluster", "-t", "Drained")
    wiped = as_json(ns, "wipeWritePerm", "-b", "broker-a")
    assert wiped["wipedTopics"][ns.addr] >= 1
    [queues] = as_json(ns, "topicRoute", "-t", "Drained")["queueDatas"]
    assert queues["perm"] == 4  # readable, not writable: producers route elsewhere
    added = as_json(ns, "addWritePerm", "-b", "broker-a")
    assert added["addedTopics"] == wiped["wipedTopics"]
    [queues] = as_json(ns, "topicRoute", "-t", "Drained")["queueDatas"]
    assert queues["perm"] == 6
    unknown = as_json(ns, "wipeWritePerm", "-b", "no-such-broker")
    assert unknown["wipedTopics"] == {ns.addr: 0}


def test_get_namesrv_config_reads_every_namesrv(own_cluster, tmp_path) -> None:
    ns, _ = own_cluster
    config = as_json(ns, "getNamesrvConfig")
    assert list(config) == [ns.addr]
    assert config[ns.addr]["kvConfigPath"] == str(tmp_path / "namesrv-kv" / "kvConfig.json")
    assert config[ns.addr]["listenHost"] == "127.0.0.1"


def test_update_namesrv_config_changes_every_namesrv_or_says_why_not(own_cluster) -> None:
    ns, _ = own_cluster
    done = as_json(ns, "updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "true")
    assert done["namesrvs"] == {ns.addr: "applied: orderMessageEnable"}
    assert as_json(ns, "getNamesrvConfig")[ns.addr]["orderMessageEnable"] == "true"
    bad = mqadmin(ns, "updateNamesrvConfig", "-k", "listenPort", "-v", "65536", ok=False)
    assert "bad value for listenPort='65536': must be between 0 and 65535" in bad.stderr
    black = mqadmin(ns, "updateNamesrvConfig", "-k", "kvConfigPath", "-v", "/x", ok=False)
    assert "Can not update config in black list" in black.stderr
