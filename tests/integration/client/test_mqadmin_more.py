"""The mqadmin commands and flags added to match Apache 4.9.8 (issue 24), run as an operator
would against a live NameServer and broker."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest
import trio

from client.message import Message
from client.producer import Producer
from remoting import constants as K
from tests.integration.client.test_mqadmin import as_json, mqadmin
from tests.kits.brokerkit import broker_conf, start_broker, start_namesrv
from tests.kits.consumekit import consume_until


@pytest.fixture
def traced(processes, tmp_path):
    """A NameServer and a broker that keeps the trace topic (traceTopicEnable)."""
    ns = start_namesrv(processes, tmp_path)
    conf = broker_conf(tmp_path, namesrvAddr=ns.addr, traceTopicEnable="true")
    return ns, start_broker(processes, conf)


def test_topic_permission_order_conf_allocation_and_route_table(cluster) -> None:
    ns, broker = cluster
    made = as_json(ns, "updateTopic", "-c", "TestCluster", "-t", "Ordered", "-w", "4", "-r", "4",
                   "-o", "true")  # fmt: skip
    assert made["orderConf"] == "broker-a:4"
    got = as_json(ns, "updateOrderConf", "-t", "Ordered", "-m", "get")
    assert got["orderConf"] == "broker-a:4"
    as_json(ns, "updateOrderConf", "-t", "Ordered", "-m", "put", "-v", "broker-a:2;broker-b:2")
    assert as_json(ns, "updateOrderConf", "-t", "Ordered", "-m", "get")["orderConf"] == (
        "broker-a:2;broker-b:2"
    )
    as_json(ns, "updateOrderConf", "-t", "Ordered", "-m", "delete")
    assert as_json(ns, "updateOrderConf", "-t", "Ordered", "-m", "get")["orderConf"] is None

    changed = as_json(ns, "updateTopicPerm", "-c", "TestCluster", "-t", "Ordered", "-p", "4")
    assert changed["brokers"] == [{"broker": broker.addr, "perm": "6 -> 4"}]
    listed = mqadmin(ns, "topicRoute", "-t", "Ordered", "-l").stdout.splitlines()
    assert listed[0].split() == ["#ClusterName", "#BrokerName", "#BrokerAddrs", "#ReadQueue",
                                 "#WriteQueue", "#Perm"]  # fmt: skip
    assert listed[1].split() == ["TestCluster", "broker-a", f"{{0={broker.addr}}}", "4", "4", "4"]
    refused = mqadmin(ns, "updateTopicPerm", "-b", "127.0.0.1:1", "-t", "Ordered", "-p", "6",
                      ok=False)  # fmt: skip
    assert "127.0.0.1:1 is not the master of a broker serving 'Ordered'" in refused.stderr

    split = as_json(ns, "allocateMQ", "-t", "Ordered", "-i", "10.0.0.1@a,10.0.0.2@b")["result"]
    assert [q["queueId"] for q in split["10.0.0.1@a"]] == [0, 1]
    assert [q["queueId"] for q in split["10.0.0.2@b"]] == [2, 3]
    rows = as_json(ns, "topicList", "-c")["rows"]
    assert ["TestCluster", "Ordered", ""] in rows


async def test_group_config_progress_skip_and_delete(cluster) -> None:
    ns, _ = cluster

    def run(*args: str, ok: bool = True):
        return trio.to_thread.run_sync(lambda: mqadmin(ns, *args, ok=ok))

    async def js(*args: str):
        return json.loads((await run(*args, "--json")).stdout)

    await js("updateSubGroup", "-c", "TestCluster", "-g", "Skipper", "-r", "3", "-q", "2")
    config = await js("getConsumerConfig", "-g", "Skipper")
    assert config["TestCluster:broker-a"]["retryMaxTimes"] == 3  # -r: Apache's meaning
    assert config["TestCluster:broker-a"]["retryQueueNums"] == 2
    missing = await run("getConsumerConfig", "-g", "NoSuchGroup", ok=False)
    assert "no broker has the subscription group 'NoSuchGroup'" in missing.stderr

    await js("updateTopic", "-c", "TestCluster", "-t", "Skipped", "-r", "1", "-w", "1")
    await js("sendMessage", "-t", "Skipped", "-p", "first")
    await consume_until(ns.addr, "Skipper", "Skipped", lambda got: len(got) >= 1)
    for i in range(3):
        await js("sendMessage", "-t", "Skipped", "-p", f"later {i}")
    every = await js("consumerProgress")  # no -g: one row per group with a retry topic
    assert next(r for r in every["rows"] if r[0] == "Skipper")[6] == 3
    assert every["headers"] == ["#Group", "#Count", "#Version", "#Type", "#Model", "#TPS",
                                "#Diff Total"]  # fmt: skip
    skipped = await js("skipAccumulatedMessage", "-g", "Skipper", "-t", "Skipped")
    assert skipped["rows"] == [["broker-a", 0, 4]]
    progress = await js("consumerProgress", "-g", "Skipper", "-t", "Skipped")
    assert [(r[4], r[5]) for r in progress["rows"]] == [(4, 0)]

    gone = await js("deleteSubGroup", "-c", "TestCluster", "-g", "Skipper", "-r", "true")
    assert gone["deletedTopics"] == [K.retry_topic("Skipper")]
    assert K.retry_topic("Skipper") not in await js("topicList")


def test_trace_resend_unique_key_queue_print_and_round_trips(traced) -> None:
    ns, _ = traced
    sent = as_json(ns, "sendMessage", "-t", "Traced", "-p", "hello", "-c", "TagA", "-k", "k1",
                   "-m", "true")  # fmt: skip
    [pub] = as_json(ns, "queryMsgTraceById", "-i", sent["msgId"])
    assert (pub["type"], pub["group"], pub["topic"], pub["status"]) == (
        "Pub", K.DEFAULT_PRODUCER_GROUP, "Traced", "success")  # fmt: skip
    assert pub["offsetMsgId"] == sent["offsetMsgId"]
    shown = mqadmin(ns, "queryMsgTraceById", "-i", sent["msgId"]).stdout.splitlines()
    assert shown[0].split() == ["#Type", "#ProducerGroup", "#ClientHost", "#SendTime",
                                "#CostTimes", "#Status"]  # fmt: skip
    assert shown[1].split()[:2] == ["Pub", K.DEFAULT_PRODUCER_GROUP]

    resent = as_json(ns, "queryMsgById", "-i", sent["offsetMsgId"], "-s", "true")["resent"]
    assert resent["sendStatus"] == "SEND_OK" and resent["msgId"] != sent["msgId"]
    copies = as_json(ns, "queryMsgByUniqueKey", "-t", "Traced", "-i", sent["msgId"], "-a")
    assert [c["body"] for c in copies] == ["hello"]
    by_key = mqadmin(ns, "queryMsgByKey", "-t", "Traced", "-k", "k1").stdout.splitlines()
    assert by_key[0].split() == ["#Message", "ID", "#QID", "#Offset"] and len(by_key) == 3

    qid = str(sent["queueId"])
    counted = as_json(ns, "printMsgByQueue", "-t", "Traced", "-a", "broker-a", "-i", qid,
                      "-f", "true", "-p", "true", "-d", "true")  # fmt: skip
    copies_here = 1 + (resent["queueId"] == sent["queueId"])  # the resent one went anywhere
    assert counted["tags"] == {"TagA": copies_here}
    assert [m["body"] for m in counted["messages"]] == ["hello"] * copies_here

    rt = as_json(ns, "checkMsgSendRT", "-t", "Traced", "-a", "3", "-s", "16")
    assert [row[2] for row in rt["rows"]] == ["true"] * 3 and rt["footer"].startswith("Avg RT: ")
    status = as_json(ns, "sendMsgStatus", "-b", "broker-a", "-c", "2", "-s", "64")
    assert [r["sendStatus"] for r in status] == ["SEND_OK", "SEND_OK"]
    assert as_json(ns, "consumeMessage", "-t", "Traced", "-s", "now") == []


async def test_maintenance_and_the_producers_a_broker_knows(cluster) -> None:
    ns, broker = cluster

    def run(*args: str) -> str:
        return mqadmin(ns, *args).stdout.strip()

    for command in ("cleanExpiredCQ", "deleteExpiredCommitLog", "cleanUnusedTopic"):
        assert await trio.to_thread.run_sync(run, command, "-b", broker.addr) == "success"
        assert await trio.to_thread.run_sync(run, command, "-c", "TestCluster") == "success"
    async with Producer.open(ns.addr, "ListedPG") as producer:
        await producer.send(Message("Produced", b"x"))
        shown = await trio.to_thread.run_sync(run, "producer", "-b", broker.addr)
    line = next(x for x in shown.splitlines() if "(ListedPG)" in x)
    assert line.startswith("producer group (ListedPG) instance : clientId=")
    assert "language=PYTHON" in line


def test_exports_write_apaches_files(cluster, tmp_path) -> None:
    ns, _ = cluster
    as_json(ns, "updateTopic", "-c", "TestCluster", "-t", "Exported")
    as_json(ns, "updateSubGroup", "-c", "TestCluster", "-g", "ExportedG")
    out = tmp_path / "export"
    done = as_json(ns, "exportMetadata", "-c", "TestCluster", "-f", str(out))
    assert done["exported"] == str(out / "metadata.json")
    metadata = json.loads((out / "metadata.json").read_text())
    assert metadata["topicConfigTable"]["Exported"]["writeQueueNums"] == 8
    assert "ExportedG" in metadata["subscriptionGroupTable"]
    assert K.TOOLS_CONSUMER_GROUP not in metadata["subscriptionGroupTable"]  # system groups stay
    as_json(ns, "exportMetadata", "-c", "TestCluster", "-f", str(out), "-t")
    assert set(json.loads((out / "topic.json").read_text())) == {"exportTime", "topicConfigTable"}
    as_json(ns, "exportConfigs", "-c", "TestCluster", "-f", str(out))
    configs = json.loads((out / "configs.json").read_text())
    assert configs["brokerConfigs"]["broker-a"]["brokerName"] == "broker-a"
    assert configs["clusterScale"] == {"namesrvSize": 1, "masterBrokerSize": 1,
                                       "slaveBrokerSize": 0}  # fmt: skip
    as_json(ns, "exportMetrics", "-c", "TestCluster", "-f", str(out))
    metrics = json.loads((out / "metrics.json").read_text())
    report = metrics["evaluateReport"]["broker-a"]
    assert report["runtimeVersion"]["rocketmqVersion"] == "V4_9_8"
    assert report["runtimeQuota"]["groupSize"] >= 1
    unknown = mqadmin(ns, "exportConfigs", "-c", "Nope", "-f", str(out), ok=False)
    assert "cluster 'Nope' not found" in unknown.stderr


def test_monitoring_and_intervals_run_until_told_to_stop(cluster) -> None:
    ns, _ = cluster
    once = mqadmin(ns, "startMonitoring", "-i", "1", "--rounds", "1").stdout.splitlines()
    assert once[0].split()[:2] == ["#Time", "#Group"]
    more = as_json(ns, "clusterList", "-m")
    assert more["headers"] == ["#Cluster Name", "#Broker Name", "#InTotalYest", "#OutTotalYest",
                               "#InTotalToday", "#OutTotalToday"]  # fmt: skip
    # -i repeats until Ctrl-C, which ends it cleanly (exit 0)
    watch = subprocess.Popen(
        [sys.executable, "-m", "client.mqadmin", "clusterList", "-i", "1", "-n", ns.addr],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert watch.stdout.readline().startswith("#Cluster Name")  # the first table is out
        watch.send_signal(signal.SIGINT)
        assert watch.wait(30) == 0
    finally:
        watch.kill()
    assert "Traceback" not in watch.stderr.read()
