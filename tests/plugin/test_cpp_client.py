"""The official C++ client (PyPI ``rocketmq==0.4.4``) against the plugin's cluster, from a
scratch project run in a subprocess, as a C++-client user's tests would use it."""

from __future__ import annotations

import pytest

from tests.plugin.scratch import leftover_servers, run_project, tag_run

pytest.importorskip("rocketmq.client", reason="the official C++ client wheel is not installed")
pytestmark = pytest.mark.interop

PROJECT = """
import threading

from rocketmq.client import Message, Producer, PushConsumer


def test_cpp_client_produces_and_consumes(rocketmq_cluster):
    topic = rocketmq_cluster.create_topic("CppOrders", queues=4)
    producer = Producer("CppPG")
    producer.set_namesrv_addr(rocketmq_cluster.namesrv_addr)
    producer.start()
    try:
        for i in range(20):
            msg = Message(topic)
            msg.set_keys(f"k{i}")
            msg.set_tags("TagA")
            msg.set_body(f"body-{i}")
            assert int(producer.send_sync(msg).status) == 0  # SEND_OK
    finally:
        producer.shutdown()

    stored = rocketmq_cluster.messages(topic)
    assert sorted(m.body for m in stored) == sorted(f"body-{i}".encode() for i in range(20))
    assert {m.tags for m in stored} == {"TagA"}

    seen, done, lock = set(), threading.Event(), threading.Lock()

    def on_message(msg):
        with lock:
            seen.add(msg.body.decode() if isinstance(msg.body, bytes) else msg.body)
            if len(seen) == 20:
                done.set()
        # returning is CONSUME_SUCCESS in this binding; raising asks for a redelivery

    consumer = PushConsumer("CppCG")
    consumer.set_namesrv_addr(rocketmq_cluster.namesrv_addr)
    consumer.subscribe(topic, on_message, "*")
    consumer.start()
    try:
        assert done.wait(60), f"{len(seen)} of 20 consumed"
        rocketmq_cluster.wait_consumed("CppCG", topic, timeout=30)  # commits every 5 s
    finally:
        consumer.shutdown()
    assert seen == {f"body-{i}" for i in range(20)}
    assert sum(n for mq, n in rocketmq_cluster.consumer_offsets("CppCG").items() if mq.topic == topic) == 20
"""


def test_official_cpp_client_in_a_scratch_project(pytester: pytest.Pytester, monkeypatch):
    tag = tag_run(monkeypatch)
    monkeypatch.setenv("HOME", str(pytester.path))  # the C++ client logs to ~/logs
    result = run_project(pytester, PROJECT)
    result.assert_outcomes(passed=1)
    assert leftover_servers(tag) == []
