"""Each fixture of the plugin in a scratch project, run in a subprocess: what passes passes,
what fails fails, and nothing the run started is left."""

from __future__ import annotations

import pytest

from tests.plugin.scratch import leftover_servers, run_project, tag_run

PROJECT = """
import pytest

from client.message import Message
from client.sync import SyncProducer


def send(cluster, topic, *bodies):
    with SyncProducer(cluster.namesrv_addr, cluster.group("PG")) as producer:
        for body in bodies:
            producer.send(Message(topic, body, tags="T", keys=body.decode()))


def test_function_cluster_holds_what_was_sent(rocketmq_cluster):
    topic = rocketmq_cluster.create_topic("Orders", queues=2)
    send(rocketmq_cluster, topic, b"a", b"b", b"c")
    held = rocketmq_cluster.messages(topic)
    assert sorted(m.body for m in held) == [b"a", b"b", b"c"]
    assert {m.queue_id for m in held} <= {0, 1}
    assert [b.role for b in rocketmq_cluster.brokers] == ["ASYNC_MASTER"]


@pytest.mark.rocketmq(layout="pair-sync", broker_conf={"defaultTopicQueueNums": 3})
def test_marker_picks_the_layout(rocketmq_cluster):
    roles = {b.name: b.role for b in rocketmq_cluster.brokers}
    assert roles == {"broker-a-m": "SYNC_MASTER", "broker-a-s": "SLAVE"}
    send(rocketmq_cluster, rocketmq_cluster.create_topic("Synced"), b"x")
    assert [m.body for m in rocketmq_cluster.messages("Synced")] == [b"x"]


def test_factory_starts_two_clusters(rocketmq_cluster_factory):
    one = rocketmq_cluster_factory()
    two = rocketmq_cluster_factory("2m-2s-async", broker_conf={"maxMessageSize": 65536})
    assert one.namesrv_addr != two.namesrv_addr
    assert len(two.namesrv_addr.split(";")) == 2
    assert sorted(b.broker_name for b in two.brokers) == ["broker-a", "broker-a", "broker-b", "broker-b"]
    topic = two.create_topic("Wide", queues=1)
    send(two, topic, *[b"m%d" % i for i in range(8)])
    held = two.messages(topic)
    assert len(held) == 8
    assert {m.store_host for m in held} == {b.addr for b in two.brokers if b.broker_id == 0}


def test_session_cluster_gives_unique_names(rocketmq_cluster_session):
    topic = rocketmq_cluster_session.topic("Orders")
    assert topic.startswith("Orders-") and topic != "Orders"
    rocketmq_cluster_session.create_topic(topic)
    send(rocketmq_cluster_session, topic, b"s")
    assert [m.body for m in rocketmq_cluster_session.messages(topic)] == [b"s"]


async def test_trio_cluster(rocketmq_cluster_trio):
    from client.producer import Producer

    topic = await rocketmq_cluster_trio.create_topic("Async")
    async with Producer.open(rocketmq_cluster_trio.namesrv_addr, "PG") as producer:
        await producer.send(Message(topic, b"t"))
    assert [m.body for m in await rocketmq_cluster_trio.messages(topic)] == [b"t"]


def test_a_failing_test_fails_and_is_cleaned_up(rocketmq_cluster):
    topic = rocketmq_cluster.create_topic("Fails")
    send(rocketmq_cluster, topic, b"f")
    assert rocketmq_cluster.messages(topic) == []


def test_unknown_layout_is_one_line(rocketmq_cluster_factory):
    from rocketmq_testing import LayoutError

    with pytest.raises(LayoutError, match="unknown layout '3m'"):
        rocketmq_cluster_factory("3m")
    with pytest.raises(LayoutError, match="listenPort"):
        rocketmq_cluster_factory(broker_conf={"listenPort": 1})
"""


def test_every_fixture_in_a_scratch_project(pytester: pytest.Pytester, monkeypatch) -> None:
    tag = tag_run(monkeypatch)
    result = run_project(pytester, PROJECT)
    result.assert_outcomes(passed=6, failed=1)
    result.stdout.fnmatch_lines(["*test_a_failing_test_fails_and_is_cleaned_up FAILED*"])
    assert leftover_servers(tag) == []
    # a passing test's cluster directory is gone, a failing one's kept for its logs
    kept = [p.parent.parent.name for p in pytester.path.rglob("rocketmq-*/logs")]
    assert [name.startswith("test_a_failing_test") for name in kept] == [True], kept
