"""What a cluster reads through the wire while a broker is down: a brokerName's messages come
from its slave, even before the slave's periodic topic sync has brought it the topic."""

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
