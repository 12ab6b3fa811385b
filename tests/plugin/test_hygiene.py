"""Port, process and directory hygiene: clusters started and stopped one after another, as a
long test session does, leave no server process, no listening port and no file behind."""

from __future__ import annotations

import time
from pathlib import Path

import psutil
import pytest

from rocketmq_testing.cluster import RocketMQCluster
from rocketmq_testing.ports import block_of
from rocketmq_testing.server import SparePool


def _port(addr: str) -> int:
    return int(addr.rsplit(":", 1)[1])


# 50 in a row took 58-96 s on a shared 2-core machine (load 8-12; 1.2-1.9 s a start, a topic
# and a stop): the full count runs with the slow tests, five in every run.
@pytest.mark.parametrize("clusters", [5, pytest.param(50, marks=pytest.mark.slow)])
def test_sequential_clusters_leave_nothing_behind(tmp_path: Path, clusters: int) -> None:
    pids: set[int] = set()
    ports: set[int] = set()
    pool = SparePool()
    t0 = time.monotonic()
    try:
        for n in range(clusters):
            base = tmp_path / f"c{n}"
            cluster = RocketMQCluster.start(base, spares=pool)
            try:
                pids |= cluster.pids()
                ports.add(_port(cluster.namesrv_addr))
                for broker in cluster.brokers:
                    ports |= set(block_of(_port(broker.addr)))
                cluster.create_topic("T", queues=1)
            finally:
                cluster.stop()
            assert not base.exists()
    finally:
        pool.close()
    print(f"{clusters} clusters started and stopped in {time.monotonic() - t0:.1f} s")

    assert len(pids) == 2 * clusters
    assert [pid for pid in pids if _running(pid)] == []
    ours = psutil.Process().children(recursive=True)
    assert [p.pid for p in ours if "rocketmq_testing.spawn" in " ".join(p.cmdline())] == []
    listening = {
        (c.laddr.port, c.pid)
        for c in psutil.net_connections("tcp")
        if c.status == psutil.CONN_LISTEN and c.laddr.port in ports
    }
    assert [(port, pid) for port, pid in listening if pid is None or pid in pids] == []
    assert list(tmp_path.iterdir()) == []


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
