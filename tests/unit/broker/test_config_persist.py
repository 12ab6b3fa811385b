"""Topic and group changes are written before they are acknowledged: a change that cannot be
written (ENOSPC, EIO) is undone and refused, the table and its data version as they were."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from broker.persist import ConfigPersistError, JsonConfigFile
from broker.subscription_group import SubscriptionGroupManager
from broker.topic_config import TopicConfigManager
from remoting import atomic_file
from remoting.body import SubscriptionGroupConfig, TopicConfig
from remoting.codes import ResponseCode


def _eio(path: Path, text: str) -> None:
    raise OSError(errno.EIO, "Input/output error")


def _topics(tmp_path: Path) -> TopicConfigManager:
    topics = TopicConfigManager(
        JsonConfigFile(tmp_path / "topics.json"), cluster_name="C", broker_name="b"
    )
    topics.load()
    return topics


def test_a_topic_change_that_cannot_be_written_is_undone(tmp_path: Path, monkeypatch) -> None:
    topics = _topics(tmp_path)
    kept = TopicConfig(topic_name="Kept", read_queue_nums=4, write_queue_nums=4)
    topics.update(kept)
    table, version = dict(topics.table), topics.data_version
    monkeypatch.setattr(atomic_file, "write_atomically", _eio)
    for change in (
        lambda: topics.update(TopicConfig(topic_name="New", read_queue_nums=1, write_queue_nums=1)),
        lambda: topics.update(
            TopicConfig(topic_name="Kept", read_queue_nums=8, write_queue_nums=8)
        ),
        lambda: topics.delete(["Kept"]),
        lambda: topics.create_in_send("Auto", "TBW102", 4),
    ):
        with pytest.raises(ConfigPersistError) as refused:
            change()
        assert refused.value.code == ResponseCode.SERVICE_NOT_AVAILABLE
        assert "cannot write config/topics.json (Input/output error)" in refused.value.remark
        assert topics.table == table and topics.data_version == version
    monkeypatch.undo()
    assert topics.create_in_send("Auto", "TBW102", 4) is not None
    assert "Auto" in (tmp_path / "topics.json").read_text()


def test_a_group_change_that_cannot_be_written_is_undone(tmp_path: Path, monkeypatch) -> None:
    groups = SubscriptionGroupManager(JsonConfigFile(tmp_path / "subscriptionGroup.json"))
    groups.load()
    groups.update(SubscriptionGroupConfig(group_name="G", retry_max_times=3))
    table, version = dict(groups.table), groups.data_version
    monkeypatch.setattr(atomic_file, "write_atomically", _eio)
    for change in (
        lambda: groups.find("AutoCreated"),
        lambda: groups.update(SubscriptionGroupConfig(group_name="G", retry_max_times=5)),
        lambda: groups.delete("G"),
    ):
        with pytest.raises(ConfigPersistError):
            change()
        assert groups.table == table and groups.data_version == version
