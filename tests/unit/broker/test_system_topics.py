"""The topics a broker creates itself (Java's TopicConfigManager constructor)."""

from __future__ import annotations

from pathlib import Path

from broker.persist import JsonConfigFile
from broker.topic_config import TopicConfigManager
from remoting import constants as K


def manager(tmp_path: Path, **options: object) -> TopicConfigManager:
    return TopicConfigManager(
        JsonConfigFile(tmp_path / "topics.json"), cluster_name="East", broker_name="broker-a",
        **options,
    )  # fmt: skip


def test_a_broker_keeps_its_clusters_reply_topic_with_one_queue(tmp_path: Path) -> None:
    topics = manager(tmp_path)
    reply = topics.get("East_REPLY_TOPIC")
    assert reply is not None and (reply.read_queue_nums, reply.write_queue_nums) == (1, 1)
    assert K.is_writeable(reply.perm) and K.is_readable(reply.perm)
    assert {"East_REPLY_TOPIC", "East", "broker-a", K.SCHEDULE_TOPIC} <= topics.system_topics


def test_the_trace_topic_exists_only_when_asked_for(tmp_path: Path) -> None:
    assert manager(tmp_path).get(K.TRACE_TOPIC) is None
    traced = manager(tmp_path, trace_topic="MyTraces")
    assert traced.get("MyTraces") is not None and "MyTraces" in traced.system_topics
