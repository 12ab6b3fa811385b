"""A broker's ports are chosen before it starts (its address is its identity); when one was
taken between the choice and the bind, the cluster starts the broker again on a fresh block
(rocketmq_testing/ports.py). Real processes; only the choice of ports is steered."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from rocketmq_testing import cluster as cluster_module
from rocketmq_testing import ports
from rocketmq_testing.cluster import ClusterError, RocketMQCluster


@pytest.fixture
def taken_port():
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


def test_a_port_taken_under_the_broker_means_a_fresh_block(tmp_path: Path, monkeypatch, taken_port):
    choices = [taken_port]
    real = ports.broker_listen_port

    def steered(avoid=()):
        return choices.pop() if choices else real(avoid)

    monkeypatch.setattr(cluster_module.ports, "broker_listen_port", steered)
    with RocketMQCluster.start(tmp_path / "c") as cluster:
        (broker,) = cluster.brokers
        assert broker.addr != f"127.0.0.1:{taken_port}"
        cluster.create_topic("AfterRetry")
        assert "Address already in use" in (tmp_path / "c" / "logs" / "broker-a-m.log").read_text()


def test_a_broker_that_cannot_start_is_one_error_with_its_last_lines(tmp_path: Path):
    with pytest.raises(
        ClusterError, match=r"(?s)broker-a-m exited with code 2.*maxMessageSize=.lots."
    ):
        RocketMQCluster.start(tmp_path / "c", broker_conf={"maxMessageSize": "lots"})
