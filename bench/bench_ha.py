"""Master/slave over loopback, 1 KiB bodies: sync sends with 8 connections on an ASYNC_MASTER
and on a SYNC_MASTER (each with a live slave), and replication throughput and lag while batches
are produced. Printed, never asserted."""

from __future__ import annotations

import shutil
import socket
import statistics
import tempfile
import threading
import time
from pathlib import Path

from bench import loadgen
from bench.bench_broker import QUEUES, Broker, frame, measure, send_frame
from remoting import fastjson
from remoting.codes import RequestCode
from remoting.command import RemotingCommand


def max_offset(addr: tuple[str, int]) -> int:
    with socket.create_connection(addr) as sock:
        sock.sendall(frame(RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO, {})))
        _, body = loadgen.read_frame(sock, bytearray())
        return int(fastjson.loads(bytes(body))["table"]["commitLogMaxOffset"])


def pair(root: Path, role: str, port: int) -> tuple[Broker, Broker]:
    master = Broker(root, port, f"brokerRole={role}\n", name=f"master-{role}")
    slave = Broker(
        root,
        port + 10,
        f"brokerId=1\nbrokerRole=SLAVE\nhaMasterAddress=127.0.0.1:{port + 1}\n",
        name=f"slave-{role}",
    )
    return master, slave


def wait_slave(master: Broker, slave: Broker) -> None:
    """Until the slave has acked the master's log (first send on a SYNC_MASTER needs it)."""
    target = max_offset(master.addr)
    while max_offset(slave.addr) < target:
        time.sleep(0.05)


def send_throughput(root: Path, role: str, port: int) -> float:
    master, slave = pair(root, role, port)
    try:
        loadgen.run(master.addr, [[send_frame("Warm", 0)]], duration_s=0.5)
        wait_slave(master, slave)
        frames = [[send_frame("HaSync", (w + q) % QUEUES) for q in range(QUEUES)] for w in range(8)]
        return measure(master, f"sync send 8 conns, {role}", frames, 1)[0]
    finally:
        slave.stop()
        master.stop()


def replication(root: Path, port: int, seconds: float = 8.0) -> None:
    master, slave = pair(root, "ASYNC_MASTER", port)
    lags: list[int] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            lags.append(max_offset(master.addr) - max_offset(slave.addr))
            time.sleep(0.1)

    try:
        start_slave = max_offset(slave.addr)
        sampler = threading.Thread(target=sample, daemon=True)
        t0 = time.perf_counter()
        sampler.start()
        frames = [[send_frame("HaBatch", w % QUEUES, batch=32)] for w in range(8)]
        loadgen.run(master.addr, frames, duration_s=seconds)
        produced_s = time.perf_counter() - t0
        stop.set()
        sampler.join()
        target = max_offset(master.addr)
        while max_offset(slave.addr) < target:
            time.sleep(0.01)
        drained_s = time.perf_counter() - t0
        mib = (target - start_slave) / 2**20
        print(
            f"replication while producing batches: {mib:,.0f} MiB in {drained_s:.1f} s "
            f"({mib / drained_s:,.1f} MiB/s; production {mib / produced_s:,.1f} MiB/s); "
            f"lag median {statistics.median(lags) / 2**10:,.0f} KiB, "
            f"max {max(lags) / 2**20:,.1f} MiB over {len(lags)} samples",
            flush=True,
        )
    finally:
        slave.stop()
        master.stop()


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="bench-ha-"))
    try:
        async_rate = send_throughput(root, "ASYNC_MASTER", 32911)
        sync_rate = send_throughput(root, "SYNC_MASTER", 33911)
        print(f"SYNC_MASTER / ASYNC_MASTER throughput: {sync_rate / async_rate:.0%}", flush=True)
        replication(root, 34911)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
