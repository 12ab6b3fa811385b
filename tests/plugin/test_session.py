"""Tests sharing the session cluster stay independent: a scratch project's tests, run in a
subprocess, see one cluster and each its own topics, groups and offsets."""

from __future__ import annotations

import pytest

from tests.plugin.scratch import leftover_servers, run_project, tag_run

PROJECT = """
import pytest

from client.message import Message
from client.sync import SyncProducer
from rocketmq_testing import ClusterError

SEEN = {}


def send(cluster, topic, count):
    with SyncProducer(cluster.namesrv_addr, cluster.group("PG")) as producer:
        for i in range(count):
            producer.send(Message(topic, b"m%d" % i))


def test_first_test_sends_to_its_orders(rocketmq_cluster_session):
    cluster = rocketmq_cluster_session
    topic = cluster.create_topic(cluster.topic("Orders"))
    send(cluster, topic, 3)
    SEEN.update(addr=cluster.namesrv_addr, topic=topic, group=cluster.group("CG"))
    assert len(cluster.messages(topic)) == 3


def test_second_test_has_orders_of_its_own(rocketmq_cluster_session):
    cluster = rocketmq_cluster_session
    assert cluster.namesrv_addr == SEEN["addr"]  # the same cluster, started once
    assert [b.role for b in cluster.brokers] == ["ASYNC_MASTER", "SLAVE"]  # the ini's layout
    topic = cluster.create_topic(cluster.topic("Orders"))
    assert topic != SEEN["topic"] and cluster.group("CG") != SEEN["group"]
    assert cluster.messages(topic) == []
    send(cluster, topic, 1)
    assert len(cluster.messages(topic)) == 1
    assert len(cluster.messages(SEEN["topic"])) == 3  # the first test's, untouched


def test_faults_are_refused_on_the_shared_cluster(rocketmq_cluster_session):
    for fault in ("kill_broker", "pause_broker", "restart_broker"):
        with pytest.raises(ClusterError, match="every later test"):
            getattr(rocketmq_cluster_session, fault)("broker-a")
"""


def test_tests_sharing_the_session_cluster_are_isolated(pytester: pytest.Pytester, monkeypatch):
    tag = tag_run(monkeypatch)
    result = run_project(pytester, PROJECT, ini="rocketmq_session_layout = pair\n")
    result.assert_outcomes(passed=3)
    assert leftover_servers(tag) == []
