"""Failure injection through the plugin, in a scratch project run in a subprocess: a crash
that loses consumer offsets means redelivery after the restart; a crash mid-send loses no
acknowledged message; a paused slave holds a SYNC_MASTER's sends until it resumes. These are
the recipes of docs/testing.md."""

from __future__ import annotations

import pytest

from tests.integration.plugin.scratch import leftover_servers, run_project, tag_run

PROJECT = '''
import threading
import time

import pytest

from client.consumer import ConsumeStatus
from client.message import Message, SendStatus
from client.sync import SyncProducer, SyncPushConsumer
from remoting.body import ConsumeFromWhere


def send(cluster, topic, count):
    with SyncProducer(cluster.namesrv_addr, "PG") as producer:
        return [producer.send(Message(topic, b"m%d" % i, keys=f"k{i}")) for i in range(count)]


def consume(cluster, topic, group, count):
    """Keys delivered to ``group`` until ``count`` arrived; closing the consumer commits."""
    keys, done = [], threading.Event()

    def listener(msgs):
        keys.extend(m.keys for m in msgs)
        if len(keys) >= count:
            done.set()
        return ConsumeStatus.CONSUME_SUCCESS

    with SyncPushConsumer(
        cluster.namesrv_addr, group, listener, {topic: "*"},
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    ):
        assert done.wait(60), f"{len(keys)} of {count} delivered"
    return keys


def committed(cluster, group, topic):
    return sum(n for mq, n in cluster.consumer_offsets(group).items() if mq.topic == topic)


# Consumer offsets reach the broker's disk once a minute here: a crash loses the last commit.
@pytest.mark.rocketmq(broker_conf={"flushConsumerOffsetInterval": 60000})
def test_a_crash_that_loses_offsets_redelivers(rocketmq_cluster):
    cluster = rocketmq_cluster
    topic = cluster.create_topic("Crash", queues=2)
    send(cluster, topic, 10)
    first = consume(cluster, topic, "CG", 10)
    cluster.wait_consumed("CG", topic, timeout=30)
    assert committed(cluster, "CG", topic) == 10

    cluster.kill_broker("broker-a")  # SIGKILL: the commit was in memory only
    assert not cluster.alive("broker-a")
    cluster.restart_broker("broker-a")

    assert len(cluster.messages(topic)) == 10  # the store kept every message
    assert committed(cluster, "CG", topic) == 0
    again = consume(cluster, topic, "CG", 10)
    assert sorted(again) == sorted(first)  # at least once: all of them, again


@pytest.mark.rocketmq(layout="pair-sync", broker_conf={"syncFlushTimeout": 1000})
def test_a_paused_slave_holds_sync_master_sends(rocketmq_cluster):
    cluster = rocketmq_cluster
    topic = cluster.create_topic("Held", queues=1)
    assert [r.status for r in send(cluster, topic, 1)] == [SendStatus.SEND_OK]
    cluster.pause_broker("broker-a-s")
    held = send(cluster, topic, 1)[0]
    assert held.status in (SendStatus.FLUSH_SLAVE_TIMEOUT, SendStatus.SLAVE_NOT_AVAILABLE)
    cluster.resume_broker("broker-a-s")
    assert [r.status for r in send(cluster, topic, 1)] == [SendStatus.SEND_OK]
    assert len(cluster.messages(topic)) == 3  # the master stored the held one too


def test_every_acknowledged_send_survives_a_crash_mid_send(rocketmq_cluster):
    from client.errors import MQClientError
    from remoting.errors import RemotingError

    cluster = rocketmq_cluster
    topic = cluster.create_topic("MidSend", queues=2)
    acked, halfway, restarted = [], threading.Event(), threading.Event()
    after_restart = []

    def produce():
        # Runs until 20 sends are acknowledged after the restart (not a fixed count of
        # attempts: on a loaded machine the restart outlasts any number of fast refusals).
        deadline = time.monotonic() + 120
        i = 0
        with SyncProducer(cluster.namesrv_addr, "PG") as producer:
            while len(after_restart) < 20 and time.monotonic() < deadline:
                i += 1
                try:
                    producer.send(Message(topic, b"m", keys=f"k{i}"))
                except (MQClientError, RemotingError, OSError):
                    continue  # the broker is down: this one was never acknowledged
                acked.append(f"k{i}")
                if restarted.is_set():
                    after_restart.append(f"k{i}")
                if len(acked) == 50:
                    halfway.set()

    sender = threading.Thread(target=produce)
    sender.start()
    assert halfway.wait(60)
    cluster.kill_broker("broker-a")
    cluster.restart_broker("broker-a")
    restarted.set()
    sender.join(150)
    assert not sender.is_alive()
    stored = {m.keys for m in cluster.messages(topic)}
    assert set(acked) <= stored
    assert len(after_restart) == 20  # sends went on after the restart


@pytest.mark.rocketmq(layout="pair")
def test_a_paused_slave_left_paused_is_still_stopped(rocketmq_cluster):
    rocketmq_cluster.pause_broker("broker-a-s")  # the teardown resumes it before SIGTERM
'''


def test_kill_restart_and_pause_in_a_scratch_project(pytester: pytest.Pytester, monkeypatch):
    tag = tag_run(monkeypatch)
    result = run_project(pytester, PROJECT)
    result.assert_outcomes(passed=4)
    assert leftover_servers(tag) == []
