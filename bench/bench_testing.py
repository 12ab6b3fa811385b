"""The test cluster (rocketmq_testing): how long a single-broker cluster takes from
``RocketMQCluster.start`` until it serves clients (NameServer up, broker registered), and until a
topic is routed and a message sent and read back; cold (every process starts and imports now)
and warm (processes spawned ahead by the SparePool and past their imports), with the servers'
CPU time until then (imports included), which the machine's load does not change. With Java and
memory enough, the floor of a JVM broker for comparison: an empty JVM with the heap flags of
Apache RocketMQ 4.9.8's distribution/bin/runbroker.sh. Printed, never asserted."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import psutil

from client.message import Message
from client.sync import SyncProducer
from rocketmq_testing.cluster import RocketMQCluster
from rocketmq_testing.server import SparePool

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "10"))
RUNBROKER_HEAP = ["-Xms8g", "-Xmx8g", "-XX:+AlwaysPreTouch"]  # runbroker.sh lines 85, 88


def cpu_seconds(pids: set[int]) -> float:
    """CPU the servers used so far (user + system): what a start costs whatever the load."""
    total = 0.0
    for pid in pids:
        try:
            times = psutil.Process(pid).cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


def one_round(base: Path, spares: SparePool | None) -> tuple[float, float, float, float]:
    t0 = time.perf_counter()
    cluster = RocketMQCluster.start(base, spares=spares)
    try:
        ready = time.perf_counter() - t0
        cpu = cpu_seconds(cluster.pids())
        topic = cluster.create_topic("Bench", queues=1)
        with SyncProducer(cluster.namesrv_addr, "BenchPG") as producer:
            producer.send(Message(topic, b"x"))
        assert len(cluster.messages(topic)) == 1
        round_trip = time.perf_counter() - t0
    finally:
        t1 = time.perf_counter()
        cluster.stop()
    return ready, round_trip, time.perf_counter() - t1, cpu


def summary(name: str, samples: list[float]) -> str:
    ordered = sorted(samples)
    p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]
    return (
        f"  {name:<34} median {statistics.median(ordered) * 1000:6.0f} ms   "
        f"p90 {p90 * 1000:6.0f} ms   min {ordered[0] * 1000:6.0f} ms"
    )


def run(mode: str, root: Path) -> None:
    spares = SparePool() if mode == "warm" else None
    rows: list[tuple[float, float, float, float]] = []
    try:
        for n in range(ROUNDS):
            if spares is not None and n == 0:
                spares.refill(["namesrv", "broker"])
            if spares is not None:
                spares.wait_warm()
            rows.append(one_round(root / f"{mode}{n}", spares))
    finally:
        if spares is not None:
            spares.close()
    print(f"{mode} ({ROUNDS} rounds, single layout):")
    print(summary("start -> serving clients", [r[0] for r in rows]))
    print(summary("start -> topic, send, read back", [r[1] for r in rows]))
    print(summary("stop (SIGTERM, clean exit, rm)", [r[2] for r in rows]))
    print(summary("server CPU until serving (all)", [r[3] for r in rows]))


def jvm_floor() -> None:
    java = shutil.which("java")
    if java is None or psutil.virtual_memory().available < 12 * 1024**3:
        print("JVM floor: skipped (needs java and 12 GiB of free memory)")
        return
    t0 = time.perf_counter()
    subprocess.run([java, *RUNBROKER_HEAP, "-version"], capture_output=True, check=True)
    print(
        f"JVM floor: `java {' '.join(RUNBROKER_HEAP)} -version` (runbroker.sh's heap, "
        f"no RocketMQ code yet): {time.perf_counter() - t0:.2f} s"
    )


def main() -> None:
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"machine: {os.cpu_count()} CPUs, load average {load} (other work slows every figure)")
    root = Path(tempfile.mkdtemp(prefix="bench-testing-"))
    try:
        run("cold", root)
        run("warm", root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    jvm_floor()


if __name__ == "__main__":
    main()
