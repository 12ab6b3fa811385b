"""Publish/subscribe views of a route, broker address choice, and latency fault avoidance."""

from __future__ import annotations

from client.fault import LatencyFaultTolerance
from client.process_queue import ProcessQueue
from client.route import (
    broker_addr,
    default_topic_publish_info,
    publish_info,
    subscribe_queues,
)
from remoting.body import BrokerData, QueueData, TopicRouteData
from remoting.message import MessageExt

ROUTE = TopicRouteData(
    queue_datas=[
        QueueData(broker_name="b", read_queue_nums=2, write_queue_nums=2, perm=6),
        QueueData(broker_name="a", read_queue_nums=4, write_queue_nums=3, perm=6),
        QueueData(broker_name="slaveonly", read_queue_nums=2, write_queue_nums=2, perm=6),
    ],
    broker_datas=[
        BrokerData(cluster="c", broker_name="a", broker_addrs={0: "a0:1", 1: "a1:1"}),
        BrokerData(cluster="c", broker_name="b", broker_addrs={0: "b0:1"}),
        BrokerData(cluster="c", broker_name="slaveonly", broker_addrs={1: "s1:1"}),
    ],
)


def test_publish_info_lists_writable_queues_of_groups_with_a_master() -> None:
    info = publish_info("T", ROUTE)
    assert [(q.broker_name, q.queue_id) for q in info.queues] == [
        ("a", 0),
        ("a", 1),
        ("a", 2),
        ("b", 0),
        ("b", 1),
    ]


def test_retry_avoids_the_broker_that_just_failed() -> None:
    info = publish_info("T", ROUTE)
    first = info.select()
    assert info.select(avoid_broker=first.broker_name).broker_name != first.broker_name


def test_auto_creation_caps_queues_at_the_default_number() -> None:
    info = default_topic_publish_info("New", ROUTE, 2)
    assert len(info.queues) == 4 and {q.topic for q in info.queues} == {"New"}


def test_subscribers_read_every_readable_queue_even_without_a_master() -> None:
    assert len(subscribe_queues("T", ROUTE)) == 8


def test_reads_fall_back_to_a_slave_when_the_master_is_gone() -> None:
    assert broker_addr(ROUTE, "a", 1) == ("a1:1", 1)
    assert broker_addr(ROUTE, "slaveonly", 0) == ("s1:1", 1)
    assert broker_addr(ROUTE, "slaveonly", 0, only_this=True) is None


def test_slow_broker_is_avoided_for_a_while() -> None:
    now = [1_000_000]
    fault = LatencyFaultTolerance(clock=lambda: now[0])
    fault.update("a", 40)
    assert fault.is_available("a")
    fault.update("a", 600)  # >= 550 ms: 30 s out
    assert not fault.is_available("a")
    now[0] += 30_000
    assert fault.is_available("a")


def test_process_queue_commits_below_the_oldest_message_in_flight() -> None:
    pq = ProcessQueue()
    msgs = [MessageExt(topic="T", body=b"x", queue_offset=i) for i in range(5)]
    pq.put(msgs)
    assert pq.remove([msgs[1], msgs[2]]) == 0  # offset 0 still in flight
    assert pq.remove([msgs[0]]) == 3
    assert pq.remove([msgs[3], msgs[4]]) == 5
