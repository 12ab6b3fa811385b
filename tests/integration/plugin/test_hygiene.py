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
    assert _spawned_children() == []
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


def _spawned_children() -> list[int]:
    """Live spawned servers below this process. Another test's exited child that its parent has
    not reaped yet is a zombie: it holds no port, file or memory, and has no command line to
    read (psutil raises), so it is not counted."""
    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            if "rocketmq_testing.spawn" in " ".join(child.cmdline()):
                found.append(child.pid)
        except (psutil.ZombieProcess, psutil.NoSuchProcess):
            continue
    return found
