"""A cluster used directly (RocketMQCluster): what it reads through the wire while a broker is
down, and how it stops brokers that a test left paused or crashed."""

from __future__ import annotations

from pathlib import Path

from client.message import Message, SendStatus
from client.sync import SyncProducer
from rocketmq_testing import RocketMQCluster


def test_messages_come_from_the_slave_while_the_master_is_down(tmp_path: Path) -> None:
    with RocketMQCluster.start(tmp_path / "c", "pair-sync") as cluster:
        topic = cluster.create_topic("Replicated", queues=2)
        with SyncProducer(cluster.namesrv_addr, "PG") as producer:
            results = [producer.send(Message(topic, b"m%d" % i, keys=f"k{i}")) for i in range(6)]
        assert {r.status for r in results} == {SendStatus.SEND_OK}  # the slave has them all
        cluster.kill_broker("broker-a")
        assert cluster.readers() == [("broker-a", cluster.broker("broker-a-s").addr)]
        held = cluster.messages(topic)
        assert sorted(m.keys for m in held) == [f"k{i}" for i in range(6)]
        assert {m.queue_id for m in held} == {0, 1}


def test_paused_brokers_stop_cleanly_and_a_crash_shows_as_its_signal(tmp_path: Path) -> None:
    cluster = RocketMQCluster.start(tmp_path / "c", "2m-2s-async")
    cluster.pause_broker("broker-a-m")
    cluster.pause_broker("broker-b-s")  # the teardown resumes both before its SIGTERM
    cluster.kill_broker("broker-b")
    codes = cluster.stop()
    assert codes == {
        "namesrv-1": 0,
        "namesrv-2": 0,
        "broker-a-m": 0,
        "broker-b-m": -9,
        "broker-a-s": 0,
        "broker-b-s": 0,
    }
    assert not (tmp_path / "c").exists()
